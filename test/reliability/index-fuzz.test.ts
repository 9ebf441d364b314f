/**
 * fast-check mutations of real MP4 headers and sample tables, and of real Matroska and WebM
 * files (bytes flipped, 32-bit fields set to extremes, boxes and elements cut short) into
 * buildIndex: each ends in an index, an error record or a MediaIndexError, within a time bound,
 * and the heap does not grow with the runs.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildIndex, bytesReader, MediaIndexError } from "../../common/media-index/index.js";
import { makeMatroska, makeTs } from "../helpers/make-matroska.js";
import { makeVideo } from "../helpers/make-video.js";
import { report, scale } from "./stack.js";

let dir: string;
const files = new Map<string, Uint8Array>();
const runs = scale(150, 1500);
const outcomes: Record<string, number> = {};
const matroskaOutcomes: Record<string, number> = {};
const tsOutcomes: Record<string, number> = {};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-rel-index-"));
  files.set(
    "tail",
    await readFile(await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 30, gop: 6, bframes: 2 })),
  );
  files.set(
    "fast",
    await readFile(
      await makeVideo(dir, { codec: "hevc", width: 64, height: 48, frames: 20, gop: 5, faststart: true, audio: true }),
    ),
  );
  files.set(
    "frag",
    await readFile(
      await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 24, gop: 6, fragmented: true }),
    ),
  );
  files.set(
    "mkv",
    await readFile(
      await makeMatroska(dir, {
        codec: "h264",
        width: 64,
        height: 48,
        frames: 30,
        gop: 6,
        audio: true,
        name: "fuzz.mkv",
      }),
    ),
  );
  files.set(
    "webm-live",
    await readFile(
      await makeMatroska(dir, {
        codec: "vp9",
        width: 64,
        height: 48,
        frames: 20,
        gop: 5,
        live: true,
        name: "fuzz.webm",
      }),
    ),
  );
  files.set(
    "ts",
    await readFile(
      await makeTs(dir, { codec: "h264", width: 64, height: 48, frames: 24, gop: 6, audio: true, name: "fuzz.ts" }),
    ),
  );
}, 120_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  report("index-fuzz", { runs_per_layout: runs, layouts: 3, seed: fc.readConfigureGlobal().seed, outcomes });
  report("matroska-index-fuzz", {
    runs_per_layout: runs,
    layouts: 2,
    seed: fc.readConfigureGlobal().seed,
    outcomes: matroskaOutcomes,
  });
  report("mpegts-index-fuzz", {
    runs_per_layout: runs,
    layouts: 1,
    seed: fc.readConfigureGlobal().seed,
    outcomes: tsOutcomes,
  });
});

/** Offsets of every box of these types, found by their four-character code. */
function boxOffsets(bytes: Uint8Array, types: readonly string[]): number[] {
  const out: number[] = [];
  const text = Buffer.from(bytes).toString("latin1");
  for (const t of types) for (let i = text.indexOf(t); i >= 4; i = text.indexOf(t, i + 1)) out.push(i - 4);
  return out.sort((a, b) => a - b);
}

async function classify(bytes: Uint8Array, key = "fuzz/x.mp4", tally = outcomes): Promise<string> {
  const result = await Promise.race([
    buildIndex(bytesReader(bytes), { key, etag: '"fuzz"' }).then(
      (index) =>
        (index as { error?: { code?: string } }).error?.code
          ? `record:${(index as { error: { code: string } }).error.code}`
          : "index",
      (err: unknown) => (err instanceof MediaIndexError ? `error:${err.code}` : `UNTYPED:${String(err)}`),
    ),
    new Promise<string>((resolve) => setTimeout(() => resolve("HANG"), 5000)),
  ]);
  const k = result.replace(/^UNTYPED:.*/, "UNTYPED");
  tally[k] = (tally[k] ?? 0) + 1;
  return result;
}

describe("mutated MP4 headers and sample tables into buildIndex", () => {
  it("a constant-size stsz or a trun claiming 2^31 samples is ERR_CORRUPT_MEDIA, not a V8 abort of the process", async () => {
    for (const [layout, box] of [
      ["tail", "stsz"],
      ["frag", "trun"],
    ] as const) {
      const bytes = new Uint8Array(files.get(layout)!);
      const view = new DataView(bytes.buffer);
      const at = boxOffsets(bytes, [box]).find((o) => view.getUint32(o) >= 16)!;
      if (box === "stsz") view.setUint32(at + 12, 1); // sample_size: constant, so no table backs the count
      view.setUint32(at + (box === "stsz" ? 16 : 12), 0x7fffffff);
      expect(await classify(bytes), layout).toBe("record:ERR_CORRUPT_MEDIA");
    }
  });

  it("a stsz whose 64-bit size is 0 reads the next box as its count: ERR_CORRUPT_MEDIA, not a V8 abort", async () => {
    // Size 1 says a 64-bit size follows; the stsz's own zero fields make it 0, which mp4box
    // parses to the end of the data: the stco after it becomes a constant size of 16 and a
    // count of 'stco' (1.9 billion). Found by the fuzz below; it aborted the test worker.
    const bytes = new Uint8Array(files.get("frag")!);
    const at = boxOffsets(bytes, ["stsz"])[0]!;
    expect(
      Buffer.from(bytes.subarray(at + 20, at + 28))
        .toString("latin1")
        .slice(4),
    ).toBe("stco");
    new DataView(bytes.buffer).setUint32(at, 1);
    expect(await classify(bytes)).toBe("record:ERR_CORRUPT_MEDIA");
  });

  it("a trun without per-sample fields may not declare more samples than the object has bytes", async () => {
    // Nothing in the box backs such a count, and mp4box builds an object per sample: 2^24 - 1
    // of them in a 6.5 KB file took 4 GB and 36 s before this bound.
    const bytes = new Uint8Array(files.get("frag")!);
    const view = new DataView(bytes.buffer);
    const at = boxOffsets(bytes, ["trun"])[0]!;
    view.setUint32(at + 8, 0x000001); // version 0, flags: data offset only
    view.setUint32(at + 12, 0xffffff);
    expect(await classify(bytes)).toBe("record:ERR_CORRUPT_MEDIA");
    view.setUint32(at + 12, 6); // as many as the fragment holds: indexes again
    expect(await classify(bytes)).not.toBe("record:ERR_CORRUPT_MEDIA");
  });

  for (const layout of ["tail", "fast", "frag"]) {
    it(`${layout}: typed outcome, no hang, bounded heap`, async () => {
      const original = files.get(layout)!;
      const tables = boxOffsets(original, [
        "moov",
        "trak",
        "stbl",
        "stsz",
        "stco",
        "co64",
        "stsc",
        "stts",
        "ctts",
        "stss",
        "avcC",
        "hvcC",
        "moof",
        "trun",
        "tfhd",
        "sidx",
        "mdhd",
        "elst",
      ]);
      expect(tables.length).toBeGreaterThan(3);
      await fuzz(original, tables, "fuzz/x.mp4", outcomes);
    });
  }
});

/** Offsets of every EBML element with one of these IDs (found by their bytes). */
function elementOffsets(bytes: Uint8Array, ids: readonly number[]): number[] {
  const out: number[] = [];
  const b = Buffer.from(bytes);
  for (const id of ids) {
    const needle = Buffer.from(
      id.toString(16).padStart(id > 0xffffff ? 8 : id > 0xffff ? 6 : id > 0xff ? 4 : 2, "0"),
      "hex",
    );
    for (let i = b.indexOf(needle); i >= 0; i = b.indexOf(needle, i + 1)) out.push(i);
  }
  return out.sort((a, b) => a - b);
}

describe("mutated Matroska and WebM into buildIndex", () => {
  for (const layout of ["mkv", "webm-live"]) {
    it(`${layout}: typed outcome, no hang, bounded heap`, async () => {
      const original = files.get(layout)!;
      // EBML header, Segment, Info, Tracks, TrackEntry, CodecPrivate, Cues, Cluster, Timestamp, BlockGroup.
      const elements = elementOffsets(
        original,
        [0x1a45dfa3, 0x18538067, 0x1549a966, 0x1654ae6b, 0x2ad7b1, 0x63a2, 0x1c53bb6b, 0x1f43b675, 0x23e383],
      );
      expect(elements.length).toBeGreaterThan(4);
      await fuzz(original, elements, `fuzz/x.${layout === "mkv" ? "mkv" : "webm"}`, matroskaOutcomes);
    });
  }
});

describe("mutated MPEG-TS into buildIndex", () => {
  it("h264 + AAC: typed outcome, no hang, bounded heap", async () => {
    const original = files.get("ts")!;
    // Every TS packet header, where PIDs, flags and adaptation fields live (and PES headers follow).
    const packets = Array.from({ length: original.length / 188 }, (_, i) => i * 188);
    await fuzz(original, packets, "fuzz/x.ts", tsOutcomes);
  });
});

/**
 * Runs mutation sequences of `original` (bytes set, 32-bit fields at or after `targets` set to
 * extremes, cuts) into buildIndex: every outcome typed, none hanging, the heap bounded.
 */
async function fuzz(
  original: Uint8Array,
  targets: readonly number[],
  key: string,
  tally: Record<string, number>,
): Promise<void> {
  const mutation = fc.oneof(
    // A 32-bit field at or just after a box or element start set to an extreme.
    fc
      .tuple(
        fc.constantFrom(...targets),
        fc.nat({ max: 40 }),
        fc.constantFrom(0, 1, 0x7fffffff, 0xffffffff, 0x10000, 8),
      )
      .map(([at, d, v]) => ({ kind: "u32" as const, at: at + d, v })),
    fc
      .tuple(fc.nat({ max: original.length - 1 }), fc.integer({ min: 0, max: 255 }))
      .map(([at, v]) => ({ kind: "byte" as const, at, v })),
    fc.nat({ max: original.length }).map((at) => ({ kind: "cut" as const, at, v: 0 })),
  );
  const heap0 = process.memoryUsage().heapUsed;
  await fc.assert(
    fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 4 }), async (ms) => {
      let bytes = new Uint8Array(original);
      for (const m of ms) {
        if (m.kind === "cut") bytes = bytes.slice(0, m.at);
        else if (m.kind === "byte" && m.at < bytes.length) bytes[m.at] = m.v;
        else if (m.kind === "u32" && m.at + 4 <= bytes.length) new DataView(bytes.buffer).setUint32(m.at, m.v);
      }
      const outcome = await classify(bytes, key, tally);
      expect(outcome, JSON.stringify(ms)).not.toMatch(/^(HANG|UNTYPED)/);
    }),
    { numRuns: runs },
  );
  global.gc?.();
  expect(process.memoryUsage().heapUsed - heap0).toBeLessThan(256 << 20);
}
