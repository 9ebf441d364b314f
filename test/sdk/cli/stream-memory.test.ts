/**
 * `ec stream`'s batch memory: each batch is released once the loop is done with it, so later
 * batches are decoded into its buffer instead of fresh pages; a batch in the loop's hands (its
 * callback, its md5 lines, its step) is never written over. Real decode of ffmpeg-made video,
 * every frame checked against ffmpeg's framemd5.
 */
import { createHash } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { streamWithProgress } from "../../../sdk/cli/stream.js";
import type { Batch } from "../../../sdk/index.js";
import { ffmpegFrameMd5s } from "../../helpers/ffmpeg-md5.js";
import { makeVideo } from "../../helpers/make-video.js";

let dir: string;
let md5s: Map<string, string[]>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-stream-memory-"));
  for (const name of ["a.mp4", "b.mp4"])
    await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 60, gop: 20, bframes: 2, name });
  md5s = new Map([
    ["a.mp4", await ffmpegFrameMd5s(join(dir, "a.mp4"))],
    ["b.mp4", await ffmpegFrameMd5s(join(dir, "b.mp4"))],
  ]);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const OPTIONS = { frames: 4, batch: 2, prefetch: 4, format: "native", device: "cpu", seed: 3 } as const;

/** Every frame of the batch's tensor against ffmpeg's md5 of that frame; returns the md5 of the whole tensor. */
function checkedHash(b: Batch): string {
  const { data, shape } = b.frames;
  const frameBytes = shape[2]!;
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  b.clips.forEach((c, i) => {
    for (let t = 0; t < c.frames; t++) {
      const at = (i * c.frames + t) * frameBytes;
      const md5 = createHash("md5")
        .update(bytes.subarray(at, at + frameBytes))
        .digest("hex");
      expect(md5, `${c.key} frame ${c.start + t}`).toBe(md5s.get(c.key)![c.start + t * c.stride]);
    }
  });
  return createHash("md5").update(bytes).digest("hex");
}

describe("ec stream's batch memory", () => {
  it("decodes later batches into the memory of batches it is done with, every frame exact", async () => {
    const buffers: ArrayBufferLike[] = [];
    const run = await streamWithProgress(dir, OPTIONS, {
      quiet: true,
      onBatch: (b) => {
        checkedHash(b);
        buffers.push(b.frames.data.buffer);
      },
    });
    expect(run.failed).toBeUndefined();
    expect(buffers.length).toBe(Math.ceil(run.stats.clips / OPTIONS.batch));
    expect(buffers.length).toBeGreaterThan(6);
    // Fresh memory per batch was the old way: each batch had a buffer of its own.
    expect(new Set(buffers).size).toBeLessThan(buffers.length);
  });

  it("keeps a batch intact until its step is over, then releases it", async () => {
    const handed: Batch[] = [];
    let intact = 0;
    const run = await streamWithProgress(dir, OPTIONS, {
      quiet: true,
      stepMs: 5,
      onBatch: (b) => {
        const hash = checkedHash(b);
        handed.push(b);
        // Checked when the loop lets it go: decodes ran ahead during the step, into other batches' memory.
        const release = b.release.bind(b);
        (b as { release: () => void }).release = () => {
          if (
            createHash("md5")
              .update(b.frames.data as Uint8Array)
              .digest("hex") === hash
          )
            intact++;
          release();
        };
      },
    });
    expect(run.failed).toBeUndefined();
    expect(handed.length).toBeGreaterThan(6);
    expect(intact).toBe(handed.length);
    for (const b of handed) expect(() => b.frames).toThrow(expect.objectContaining({ code: "ERR_BATCH_RELEASED" }));
  });
});
