import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { syntheticEntry } from "../../bench/synthetic-table.js";
import { EntryColumns } from "../../common/dataset-table/entry-columns.js";
import {
  decodePageBytes,
  encodePageBytes,
  PAGE_FORMAT_UNSHARDED,
  PAGE_FORMAT_VERSION,
  pageSections,
} from "../../common/dataset-table/page-codec.js";
import { pageShards } from "../../common/page-shards.js";
import { SetDigest } from "../../common/dataset-table/set-digest.js";
import { MediaKind, type TableEntryV1, TableEntryV1 as EntrySchema, VideoCodec } from "../../common/schema/index.js";

const text = fc.string({ unit: "binary", maxLength: 24 }).filter((s) => !/\p{Cs}/u.test(s)); // a lone surrogate is no UTF-8 key
const u32 = fc.integer({ min: 0, max: 0xffffffff });
const positive = fc.integer({ min: 1, max: 0xffffffff });

/** Any entry TableEntryV1 accepts whose numbers fit the columns: every optional field present or not. */
const entry: fc.Arbitrary<TableEntryV1> = fc
  .record(
    {
      key: text,
      size: fc.maxSafeNat(),
      etag: text,
      kind: fc.constantFrom(...MediaKind.options),
      frames: u32,
      keyframes: fc.array(u32, { maxLength: 12 }),
      codec: fc.constantFrom(...VideoCodec.options),
      width: positive,
      height: positive,
      error: fc.record({ code: text, message: text }),
    },
    { requiredKeys: ["key", "size", "etag", "kind"] },
  )
  .map((e) => EntrySchema.parse(e));

const md5Etag = fc.uint8Array({ minLength: 16, maxLength: 16 }).map((b) => `"${Buffer.from(b).toString("hex")}"`);
/** Pages of any etags, and pages whose every etag is an MD5 (stored as 16 bytes each). */
const page = fc.oneof(
  fc.array(entry, { maxLength: 40 }),
  fc.array(
    fc.tuple(entry, md5Etag).map(([e, etag]) => ({ ...e, etag })),
    { maxLength: 40 },
  ),
);

/** A small video's entry as open-scale seeds them (an MD5-shaped etag). */
const video = (i: number): TableEntryV1 => syntheticEntry(`d/v-${i}.mp4`, i);

describe("the columnar table page codec", () => {
  it("gives back every entry exactly, through the bytes and through each column accessor", () => {
    fc.assert(
      fc.property(text, page, (root, entries) => {
        const bytes = encodePageBytes(root, entries);
        expect(bytes[0]).not.toBe(0x7b);
        const got = decodePageBytes(bytes);
        expect(got.root).toBe(root);
        expect(got.entries.length).toBe(entries.length);
        expect(got.entries.entries()).toEqual(entries);
        entries.forEach((e, i) => {
          expect(got.entries.key(i)).toBe(e.key);
          expect(got.entries.etag(i)).toBe(e.etag);
          expect(got.entries.kind(i)).toBe(e.kind);
          expect(got.entries.frames(i)).toBe(e.frames);
          expect(got.entries.keyframes(i) && Array.from(got.entries.keyframes(i)!)).toEqual(e.keyframes);
          expect(got.entries.error(i)).toEqual(e.error);
          expect(got.entries.at(i)).toEqual({ key: e.key, size: e.size, etag: e.etag, kind: e.kind });
        });
      }),
      { numRuns: 300 },
    );
  });

  it("stores a page's shards (format 4): read back as the page-local rule cuts them, each entry decoded when its shard is read", () => {
    fc.assert(
      fc.property(
        text,
        page,
        fc.integer({ min: 1, max: 2 ** 52 }),
        fc.boolean(),
        (root, entries, shardBytes, apart) => {
          const bytes = encodePageBytes(root, entries, { shardBytes, apart });
          expect(new DataView(bytes.buffer).getUint32(4, true)).toBe(PAGE_FORMAT_VERSION);
          const rule = pageShards(
            { length: entries.length, key: (i) => entries[i]!.key, size: (i) => entries[i]!.size },
            shardBytes,
          );
          const got = decodePageBytes(bytes).entries;
          expect(Array.from(got.shardStarts(shardBytes)!)).toEqual(rule.map((s) => s.first));
          expect(got.shardStarts(shardBytes + 1)).toBeUndefined();
          expect(got.decoded).toBe(0);
          // Read back to front, a shard at a time: each accessor fills its own shard only.
          for (let i = entries.length - 1; i >= 0; i--) {
            const e = entries[i]!;
            const shard = [...rule].reverse().find((s) => s.first <= i)!;
            const before = got.decoded;
            expect(got.key(i)).toBe(e.key);
            expect(got.decoded - before).toBe(i === shard.first + shard.count - 1 ? shard.count : 0);
            if (!apart) expect(got.etag(i)).toBe(e.etag);
            expect(got.kind(i)).toBe(e.kind);
            expect(got.frames(i)).toBe(e.frames);
            expect(got.keyframes(i) && Array.from(got.keyframes(i)!)).toEqual(e.keyframes);
            expect(got.error(i)).toEqual(e.error);
          }
          expect(got.decoded).toBe(entries.length);
          const again = decodePageBytes(bytes).entries;
          expect(entries.map((e, i) => again.entry(i, apart ? e.etag : undefined))).toEqual(entries);
          expect(
            decodePageBytes(encodePageBytes(root, entries, { apart })).entries.shardStarts(shardBytes),
          ).toBeUndefined();
        },
      ),
      { numRuns: 300 },
    );
  });

  it("concatenates pages into the entries of all of them, in order", () => {
    fc.assert(
      fc.property(fc.array(page, { maxLength: 5 }), (pages) => {
        const all = EntryColumns.concat(
          pages.map((p, k) => decodePageBytes(encodePageBytes("d", p, k % 2 ? { shardBytes: 1 << 20 } : {})).entries),
        );
        expect(all.entries()).toEqual(pages.flat());
        const a = new SetDigest();
        const b = new SetDigest();
        for (let i = 0; i < all.length; i++) a.add(all.key(i), all.etag(i));
        for (const e of pages.flat()) b.add(e.key, e.etag);
        expect(a.toString()).toBe(b.toString());
      }),
      { numRuns: 100 },
    );
  });

  it("stores R2's MD5 etags as 16 bytes and lengths, not offsets: smaller gzip than the JSON page", () => {
    // An R2 ETag is the MD5 of the bytes: random hex, what most of a page's bytes are.
    const md5 = (i: number) => `"${createHash("md5").update(String(i)).digest("hex")}"`;
    const entries = Array.from({ length: 1000 }, (_, i) => ({ ...video(i), etag: md5(i) }));
    const json = gzipSync(JSON.stringify({ version: 1, root: "d", entries })).length;
    const columns = gzipSync(encodePageBytes("d", entries)).length;
    expect(columns).toBeLessThan(0.85 * json);
    expect(decodePageBytes(encodePageBytes("d", entries)).entries.entries()).toEqual(entries);
  });

  it("is byte-for-byte the same page for the same entries (the head's digest covers these bytes)", () => {
    const entries = Array.from({ length: 50 }, (_, i) => video(i));
    expect(encodePageBytes("d", entries)).toEqual(encodePageBytes("d", structuredClone(entries)));
    expect(new TextDecoder().decode(encodePageBytes("d", entries).subarray(0, 4))).toBe("ECTC");
    expect(new DataView(encodePageBytes("d", entries).buffer).getUint32(4, true)).toBe(PAGE_FORMAT_UNSHARDED);
    const sharded = encodePageBytes("d", entries, { shardBytes: 60_000 });
    expect(sharded).toEqual(encodePageBytes("d", structuredClone(entries), { shardBytes: 60_000 }));
    expect(new DataView(sharded.buffer).getUint32(4, true)).toBe(PAGE_FORMAT_VERSION);
    // The same columns, and the shard sections (each shard's entries, key bytes and keyframes; no text etags here).
    const named = (b: Uint8Array) => pageSections(b).map(([name, s]) => [name, s.length]);
    expect(
      named(sharded)
        .filter(([name]) => !String(name).startsWith("shard"))
        .slice(1),
    ).toEqual(named(encodePageBytes("d", entries)).slice(1));
    const shards = pageShards({ length: 50, key: (i) => entries[i]!.key, size: (i) => entries[i]!.size }, 60_000);
    expect(named(sharded).filter(([name]) => String(name).startsWith("shard"))).toEqual([
      ["shardLength", 4 * shards.length],
      ["shardKeyBytes", 4 * shards.length],
      ["shardKeyframes", 4 * shards.length],
      ["shardEtagBytes", 0],
    ]);
  });

  it("stores a page whose numbers pass 2^32 as JSON (format 1), and reads it back the same", () => {
    const entries = [video(0), { ...video(1), frames: 2 ** 40, keyframes: [0, 2 ** 33] }];
    const bytes = encodePageBytes("d", entries);
    expect(JSON.parse(new TextDecoder().decode(bytes))).toEqual({ version: 1, root: "d", entries });
    expect(decodePageBytes(bytes).entries.entries()).toEqual(entries);
  });

  it("still reads a page written before columns (format 1 JSON)", () => {
    const entries = [
      video(0),
      {
        key: "d/bad.mp4",
        size: 3,
        etag: '"0"',
        kind: "error" as const,
        error: { code: "ERR_INDEX_CORRUPT", message: "m" },
      },
    ];
    const json = new TextEncoder().encode(JSON.stringify({ version: 1, root: "d", entries }));
    const got = decodePageBytes(json);
    expect(got.root).toBe("d");
    expect(got.entries.entries()).toEqual(entries);
  });

  it("refuses a page of another format version, or bytes that do not add up, with ERR_TABLE_PAGE_FORMAT", () => {
    const good = encodePageBytes("d", [video(0), video(1)]);
    const newer = encodePageBytes("d", [video(0), video(1)], { shardBytes: 1 << 20 });
    new DataView(newer.buffer).setUint32(4, PAGE_FORMAT_VERSION + 1, true);
    expect(() => decodePageBytes(newer)).toThrow(
      expect.objectContaining({
        code: "ERR_TABLE_PAGE_FORMAT",
        message: expect.stringMatching(
          /^Expected table page format 1 to 4 but received format 5 \(written by a newer edge/,
        ),
      }),
    );
    // A format-3 page said to be format 4 (no shards), and a format-4 page said to be format 3 (shards): neither is read.
    const unsharded = good.slice();
    new DataView(unsharded.buffer).setUint32(4, PAGE_FORMAT_VERSION, true);
    expect(() => decodePageBytes(unsharded)).toThrow(expect.objectContaining({ code: "ERR_TABLE_PAGE_FORMAT" }));
    const older = encodePageBytes("d", [video(0), video(1)], { shardBytes: 1 << 20 });
    new DataView(older.buffer).setUint32(4, PAGE_FORMAT_UNSHARDED, true);
    expect(() => decodePageBytes(older)).toThrow(expect.objectContaining({ code: "ERR_TABLE_PAGE_FORMAT" }));
    expect(() => decodePageBytes(good.subarray(0, good.length - 1))).toThrow(
      expect.objectContaining({ code: "ERR_TABLE_PAGE_FORMAT", message: expect.stringMatching(/^Expected \d+ bytes/) }),
    );
    expect(() => decodePageBytes(new Uint8Array([1, 2, 3]))).toThrow(
      expect.objectContaining({ code: "ERR_TABLE_PAGE_FORMAT" }),
    );
    // The kind column (2 bytes) comes before codec and has (2 each), keys (2 × 9) and etags (2 MD5s of 16).
    const badKind = good.slice();
    const at = badKind.length - 2 * 16 - 2 * 9 - 2 - 2 - 2;
    badKind[at] = 200;
    expect(() => decodePageBytes(badKind)).toThrow(
      expect.objectContaining({
        code: "ERR_TABLE_PAGE_FORMAT",
        message: "Expected a valid entry 0 of the table page but its kind is not",
      }),
    );
  });

  it("refuses shard sections that do not add up at once, and a bad entry of format 4 when its shard is read", () => {
    const entries = Array.from({ length: 8 }, (_, i) => video(i));
    // Every video at the target: each its own shard.
    const bytes = encodePageBytes("d", entries, { shardBytes: 1 });
    const sections = (b: Uint8Array) => new Map(pageSections(b).map(([name, s]) => [name, s]));
    const cut = bytes.slice();
    new DataView(cut.buffer, sections(cut).get("shardLength")!.byteOffset).setUint32(0, 2, true);
    expect(() => decodePageBytes(cut)).toThrow(
      expect.objectContaining({
        code: "ERR_TABLE_PAGE_FORMAT",
        message: expect.stringMatching(/^Expected shard entries/),
      }),
    );
    const keyBytes = bytes.slice();
    new DataView(keyBytes.buffer, sections(keyBytes).get("shardKeyBytes")!.byteOffset).setUint32(0, 0, true);
    expect(() => decodePageBytes(keyBytes)).toThrow(expect.objectContaining({ code: "ERR_TABLE_PAGE_FORMAT" }));
    const badKind = bytes.slice();
    sections(badKind).get("kind")![5] = 200;
    const got = decodePageBytes(badKind).entries;
    expect(got.key(4)).toBe(entries[4]!.key);
    expect(() => got.kind(5)).toThrow(
      expect.objectContaining({
        code: "ERR_TABLE_PAGE_FORMAT",
        message: "Expected a valid entry 5 of the table page but its kind is not",
      }),
    );
    expect(() => got.entries()).toThrow(expect.objectContaining({ code: "ERR_TABLE_PAGE_FORMAT" }));
  });

  it("reads a page from bytes at any offset (a view into a larger buffer)", () => {
    const bytes = encodePageBytes("d", [video(0), video(1)]);
    const shifted = new Uint8Array(bytes.length + 3);
    shifted.set(bytes, 3);
    expect(decodePageBytes(shifted.subarray(3)).entries.entries()).toEqual([video(0), video(1)]);
    const sharded = encodePageBytes("d", [video(0), video(1)], { shardBytes: 1 });
    const moved = new Uint8Array(sharded.length + 5);
    moved.set(sharded, 5);
    expect(decodePageBytes(moved.subarray(5)).entries.entries()).toEqual([video(0), video(1)]);
  });
});
