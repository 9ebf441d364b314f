import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { makeVideo } from "../../helpers/make-video.js";
import { open } from "../../../sdk/open.js";
import type { DecodeClip } from "../../../sdk/pipeline/decode.js";
import { LocalDirSource } from "../../../sdk/source/index.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-sdk-mem-"));
  await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 200, gop: 5, name: "long.mp4" });
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const FRAME = 512 << 10;

// A forced collection before each sample measures what the stream keeps alive, not how much
// garbage the collector has let build up (that depends on Node's version and the machine's load).
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
function live(): number {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** Every decoded frame is 512 KiB: a stream that held on to its output would grow by hundreds of MiB. */
const bigFrames: DecodeClip = async (req) => ({
  device: "cpu",
  frames: req.keep.map((pts) => ({
    data: new Uint8Array(FRAME).fill(1 + (pts % 251)),
    pts,
    width: 1024,
    height: 1024,
    format: "test",
  })),
});

it("a long stream keeps live memory within what prefetch and batch allow, whatever the dataset's length", async () => {
  const prefetch = 4;
  const batch = 2;
  const frames = 4;
  // hop 1: every frame starts a clip, 197 clips × 2 MiB = ~400 MiB decoded in all.
  const ds = await open(
    dir,
    { frames, hop: 1, align: "exact", prefetch, batch, workers: 2, device: "cpu" },
    { source: new LocalDirSource(dir), decode: bigFrames },
  );
  expect(ds.clipCount).toBe(197);
  const bound = (prefetch + 2 * batch) * frames * FRAME;
  const base = live();
  let peak = 0;
  for await (const b of ds) {
    expect(b.frames.data[0]).toBeDefined();
    peak = Math.max(peak, live() - base);
  }
  expect(ds.stats().clips).toBe(197);
  // Slack for the stream's own bookkeeping; a stream that held on to its output would keep ~400 MiB.
  expect(peak).toBeLessThan(bound + 32 * 1024 * 1024);
});
