/**
 * Streams of one process share no state: each learns its own native frame sizes (so one stream's
 * videos never size another's batch slots) and each has decoders of its own, closed when it
 * ends. Real decode of ffmpeg-made video, every frame checked against ffmpeg's framemd5.
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDecoder, type Decoder } from "../../../native/index.js";
import { expectFramesMatch, ffmpegFrameMd5s } from "../../helpers/ffmpeg-md5.js";
import { makeVideo } from "../../helpers/make-video.js";
import { open, type Batch, type OpenOptions } from "../../../sdk/index.js";
import { nativeDecoders } from "../../../sdk/pipeline/native-decode.js";

let root: string;
/** Two datasets whose videos differ only in pixel format: same codec and size, other native frame bytes. */
const dirs = { yuv420p: "", yuv444p: "" };
const md5s = new Map<string, string[]>();

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "ec-stream-own-state-"));
  for (const pixFmt of ["yuv420p", "yuv444p"] as const) {
    const dir = join(root, pixFmt);
    await mkdir(dir);
    const file = await makeVideo(dir, {
      codec: "h264",
      width: 64,
      height: 48,
      frames: 24,
      gop: 12,
      pixFmt,
      name: "v.mp4",
    });
    md5s.set(pixFmt, await ffmpegFrameMd5s(file));
    dirs[pixFmt] = dir;
  }
});
afterAll(() => rm(root, { recursive: true, force: true }));

/** One clip in flight at a time: a stream's next clip starts only when the consumer pulls. */
const OPTIONS: OpenOptions = { frames: 4, batch: 1, format: "native", device: "cpu", prefetch: 1, workers: 1 };

/** The tensor is a view of the memory the decoder wrote the clip into: its slot was the right size. */
const isPlaced = (b: Batch) => b.frames.data.buffer === b.decoded[0]!.frames[0]!.data.buffer;

/** A stream pulled one batch at a time, which can wait until the clip started behind that batch is decoded. */
async function stepper(pixFmt: keyof typeof dirs) {
  let produced = 0;
  let wake = () => {};
  const ds = await open(dirs[pixFmt], {
    ...OPTIONS,
    // Called once a clip is decoded (and its frame size learned).
    filter: () => {
      produced++;
      wake();
      return true;
    },
  });
  const it = ds[Symbol.asyncIterator]();
  const placed: boolean[] = [];
  let frames = 0;
  return {
    ds,
    placed,
    get frames() {
      return frames;
    },
    /** The next batch, then waits until the clip the stream started behind it is decoded too; false at the end. */
    async step(): Promise<boolean> {
      const next = await it.next();
      if (next.done) return false;
      placed.push(isPlaced(next.value));
      frames += expectFramesMatch(next.value, () => md5s.get(pixFmt));
      next.value.release();
      const want = Math.min(placed.length + 1, ds.clipCount);
      while (produced < want) await new Promise<void>((r) => (wake = r));
      return true;
    },
  };
}

describe("streams of one process", () => {
  it("learn native frame sizes of their own: another stream's videos never size their slots", async () => {
    const a = await stepper("yuv420p");
    const b = await stepper("yuv444p");
    // Turn by turn: each stream's next clip takes its slot after the other stream decoded one of its own.
    let more = true;
    while (more) more = [await a.step(), await b.step()].some(Boolean);
    for (const s of [a, b]) {
      expect(s.placed.length).toBe(6);
      expect(s.frames).toBe(6 * 4);
      // Only the first clip had no size to go by.
      expect(s.placed.slice(1)).toEqual([true, true, true, true, true]);
      await s.ds.close();
    }
  });

  it("each open their own decoders, closed when the stream ends and not before", async () => {
    const made = { yuv420p: [] as Decoder[], yuv444p: [] as Decoder[] };
    const recording = (list: Decoder[]) => () =>
      nativeDecoders({
        create: async (o) => {
          const d = await createDecoder(o);
          list.push(d);
          return d;
        },
      });
    const open420 = await open(dirs.yuv420p, OPTIONS, { decoders: recording(made.yuv420p) });
    const open444 = await open(dirs.yuv444p, OPTIONS, { decoders: recording(made.yuv444p) });
    const first = open420[Symbol.asyncIterator]();
    const batch = await first.next();
    expectFramesMatch(batch.value!, () => md5s.get("yuv420p"));
    let frames = 0;
    for await (const b of open444) frames += expectFramesMatch(b, () => md5s.get("yuv444p"));
    expect(frames).toBe(6 * 4);
    expect(made.yuv420p.length).toBeGreaterThan(0);
    expect(made.yuv444p.length).toBeGreaterThan(0);
    // The finished stream's codecs are freed; the other stream goes on with its own.
    for (const d of made.yuv444p) await expectClosed(d);
    frames = expectFramesMatch(batch.value!, () => md5s.get("yuv420p"));
    for (let next = await first.next(); !next.done; next = await first.next())
      frames += expectFramesMatch(next.value, () => md5s.get("yuv420p"));
    expect(frames).toBe(6 * 4);
    for (const d of made.yuv420p) await expectClosed(d);
    await open420.close();
    await open444.close();
  });
});

async function expectClosed(d: Decoder): Promise<void> {
  await expect(d.decodeRun({ data: new Uint8Array(0), samples: [] })).rejects.toMatchObject({
    code: "ERR_DECODER_CLOSED",
  });
}
