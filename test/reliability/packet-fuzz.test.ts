/**
 * Fuzzed packets through the full pipeline (index → span → packets → native decode → batch),
 * beyond the native part's unit fuzz: fast-check corrupts the sample data of a real MP4 (the
 * index stays valid, so every damaged packet reaches the decoder), and open() streams it beside
 * an untouched file. Each run must end, report every lost clip with a typed code, and deliver
 * every clip of the untouched file byte-equal to ffmpeg's decode.
 */
import { copyFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildIndex, bytesReader } from "../../common/media-index/index.js";
import type { SampleTableV1 } from "../../common/schema/index.js";
import { open, type SdkError } from "../../sdk/index.js";
import { ffmpegFrameMd5s, expectFramesMatch } from "../helpers/ffmpeg-md5.js";
import { makeVideo } from "../helpers/make-video.js";
import { report, scale } from "./stack.js";

let dir: string;
let source: Uint8Array;
let samples: SampleTableV1;
let cleanMd5s: string[];
const runs = scale(10, 80);
const outcomes = { runs: 0, clips_delivered: 0, clips_lost: 0, codes: {} as Record<string, number> };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-rel-packets-"));
  const file = await makeVideo(dir, {
    codec: "h264",
    width: 64,
    height: 48,
    frames: 36,
    gop: 6,
    bframes: 2,
    name: "src.mp4",
  });
  source = new Uint8Array(await readFile(file));
  const index = await buildIndex(bytesReader(source), { key: "src.mp4", etag: '"src"' });
  samples = index.video!.samples;
  cleanMd5s = await ffmpegFrameMd5s(file);
}, 120_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  report("packet-fuzz", { ...outcomes, seed: fc.readConfigureGlobal().seed });
});

const Mutation = fc.record({
  sample: fc.nat(),
  at: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
  kind: fc.constantFrom("flip", "zero", "garbage", "length"),
  len: fc.integer({ min: 1, max: 64 }),
  byte: fc.integer({ min: 0, max: 255 }),
});

type Mutation = typeof Mutation extends fc.Arbitrary<infer T> ? T : never;

/** Damages sample data in place; the moov (and so the index) is untouched. */
function mutate(bytes: Uint8Array, m: Mutation): void {
  const i = m.sample % samples.size.length;
  const start = samples.offset[i]!;
  const size = samples.size[i]!;
  const pos = start + Math.floor(m.at * size);
  const end = Math.min(start + size, pos + m.len);
  if (m.kind === "flip") bytes[pos] = bytes[pos]! ^ (m.byte || 1);
  else if (m.kind === "zero") bytes.fill(0, pos, end);
  else if (m.kind === "garbage") for (let p = pos; p < end; p++) bytes[p] = (m.byte * 31 + p * 17) & 0xff;
  // The 4-byte NAL length prefix at the start of the sample: claims more or less than is there.
  else new DataView(bytes.buffer, bytes.byteOffset).setUint32(start, m.byte * 0x01010101);
}

describe("fuzzed packets through the full pipeline", () => {
  // Keyframe-aligned clips of 3 frames over 36 frames with a GOP of 6: 6 clips a file; exact: 12,
  // cut from GOP runs (a damaged run restarts at the keyframe for its next clip).
  it.each([
    ["keyframe", 6],
    ["exact", 12],
  ] as const)(
    "%s clips: every run ends, lost clips are typed, and the untouched file's frames stay exact",
    async (align, clipsPerFile) => {
      await fc.assert(
        fc.asyncProperty(fc.array(Mutation, { minLength: 1, maxLength: 6 }), async (mutations) => {
          const runDir = await mkdtemp(join(dir, "run-"));
          try {
            const bytes = new Uint8Array(source);
            for (const m of mutations) mutate(bytes, m);
            await writeFile(join(runDir, "bad.mp4"), bytes);
            await copyFile(join(dir, "src.mp4"), join(runDir, "good.mp4"));

            const errors: SdkError[] = [];
            const ds = await open(runDir, {
              frames: 3,
              align,
              format: "native",
              batch: 2,
              device: "cpu",
              workers: 2,
              shuffle: false,
              onError: (e) => errors.push(e),
            });
            let goodFrames = 0;
            let delivered = 0;
            const deadline = new Promise<never>((_, reject) =>
              setTimeout(() => reject(new Error("HANG: the stream did not end in 30 s")), 30_000),
            );
            const drain = (async () => {
              for await (const b of ds) {
                delivered += b.clips.length;
                goodFrames += expectFramesMatch(b, (key) => (key.endsWith("good.mp4") ? cleanMd5s : undefined));
              }
            })();
            await Promise.race([drain, deadline]);
            await ds.close();

            for (const e of errors) {
              expect(e.code, e.message).toMatch(/^ERR_[A-Z0-9_]+$/);
              expect((e as { key?: string }).key ?? e.message, "only the damaged file loses clips").toMatch(/bad\.mp4/);
            }
            expect(goodFrames).toBe(clipsPerFile * 3);
            expect(delivered + errors.length).toBe(ds.clipCount);
            outcomes.runs++;
            outcomes.clips_delivered += delivered;
            outcomes.clips_lost += errors.length;
            for (const e of errors) outcomes.codes[e.code] = (outcomes.codes[e.code] ?? 0) + 1;
          } finally {
            await rm(runDir, { recursive: true, force: true });
          }
        }),
        { numRuns: runs },
      );
    },
    300_000,
  );
});
