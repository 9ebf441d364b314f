import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compareKeys } from "../../common/dataset-table/entry.js";
import { countPageShards, cutsBefore, keyHash, keyHashUtf8, pageShards } from "../../common/page-shards.js";

const TARGET = 1 << 20;
const page = (objects: readonly { key: string; size: number }[]) => ({
  length: objects.length,
  key: (i: number) => objects[i]!.key,
  size: (i: number) => objects[i]!.size,
});
/** The keys that start a shard. */
const starts = (objects: readonly { key: string; size: number }[]) =>
  new Set(pageShards(page(objects), TARGET).map((s) => objects[s.first]!.key));

/** A page's objects: distinct keys in key order, sizes up to twice the target. */
const objects = fc
  .uniqueArray(
    fc.record({ key: fc.string({ minLength: 1, maxLength: 12 }), size: fc.integer({ min: 0, max: 2 * TARGET }) }),
    { selector: (o) => o.key, minLength: 1, maxLength: 200 },
  )
  .map((xs) => xs.sort((a, b) => compareKeys(a.key, b.key)));

describe("the page-local shard rule", () => {
  it("cuts before an object by the object alone: inserting or removing one changes no other cut", () => {
    fc.assert(
      fc.property(
        objects,
        fc.record({ key: fc.string({ minLength: 1, maxLength: 12 }), size: fc.integer({ min: 0, max: 2 * TARGET }) }),
        (before, extra) => {
          fc.pre(!before.some((o) => o.key === extra.key));
          const after = [...before, extra].sort((a, b) => compareKeys(a.key, b.key));
          const [a, b] = [starts(before), starts(after)];
          // Only the inserted object's own cut, and the page's first object (which always starts one), may differ.
          const firsts = new Set([before[0]!.key, after[0]!.key, extra.key]);
          for (const key of a) if (!firsts.has(key)) expect(b.has(key)).toBe(true);
          for (const key of b) if (!firsts.has(key)) expect(a.has(key)).toBe(true);
          // Shards are runs of the page that cover it, each begun by a cut or the page's start.
          const shards = pageShards(page(after), TARGET);
          expect(shards.reduce((n, s) => n + s.count, 0)).toBe(after.length);
          expect(shards.reduce((n, s) => n + s.bytes, 0)).toBe(after.reduce((n, o) => n + o.size, 0));
          expect(
            countPageShards(
              after.map((o) => o.key),
              after.map((o) => o.size),
              TARGET,
            ),
          ).toBe(shards.length);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("always starts a shard at an object of the target's size or more", () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: TARGET, max: 2 ** 40 }), (key, size) => {
        expect(cutsBefore(key, size, TARGET)).toBe(true);
      }),
    );
    expect(cutsBefore("a", 0, TARGET)).toBe(false);
  });

  it("makes shards of the target's bytes on average, whatever the sizes", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 }), fc.integer({ min: 2, max: 64 }), (seed, spread) => {
        // 40,000 objects of target / spread bytes on average: 40,000 / spread shards expected.
        let x = seed;
        const next = () => ((x = Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) >>> 0), x / 2 ** 32);
        const n = 40_000;
        const sizes = Array.from({ length: n }, () => Math.floor(next() * ((2 * TARGET) / spread)));
        const keys = Array.from({ length: n }, (_, i) => `ds/${seed}/${String(i).padStart(6, "0")}.mp4`);
        const total = sizes.reduce((s, v) => s + v, 0);
        const shards = countPageShards(keys, sizes, TARGET);
        // Cuts are Bernoulli(size / target): the mean shard is the target within a few standard deviations.
        const expected = total / TARGET;
        expect(Math.abs(shards - expected)).toBeLessThan(5 * Math.sqrt(expected) + 2);
      }),
      { numRuns: 8 },
    );
  });

  it("hashes keys over the whole 32-bit range, the same for the same key", () => {
    const hashes = Array.from({ length: 4096 }, (_, i) => keyHash(`g/${i}.mp4`));
    expect(keyHash("g/1.mp4")).toBe(hashes[1]);
    // Sequential keys spread: every sixteenth of the range gets its share.
    const buckets = new Array(16).fill(0);
    for (const h of hashes) buckets[Math.floor(h / 2 ** 28)]++;
    for (const b of buckets) expect(b).toBeGreaterThan(4096 / 16 / 2);
  });

  it("hashes a key from its UTF-8 bytes as from its string, ASCII or not, so a page's shards cut alike", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ key: fc.string({ unit: "grapheme", minLength: 1 }), size: fc.nat(4 * TARGET) })),
        (objects) => {
          const bytes = objects.map((o) => new TextEncoder().encode(o.key));
          const joined = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0));
          const ends: number[] = [];
          let at = 0;
          for (const b of bytes) joined.set(b, at), ends.push((at += b.length));
          for (const [i, o] of objects.entries())
            expect(keyHashUtf8(joined, i === 0 ? 0 : ends[i - 1]!, ends[i]!)).toBe(keyHash(o.key));
          const hashed = {
            ...page(objects),
            hash: (i: number) => keyHashUtf8(joined, i === 0 ? 0 : ends[i - 1]!, ends[i]!),
          };
          expect(pageShards(hashed, TARGET)).toEqual(pageShards(page(objects), TARGET));
        },
      ),
      { numRuns: 50 },
    );
  });
});
