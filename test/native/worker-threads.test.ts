import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { decodeAll, ffmpegFrameMd5s, indexedVideo, type IndexedVideo } from "./helpers.js";
import { frameMd5, packetsFromTrack } from "../../native/index.js";
import { addonCandidates } from "../../native/lib/load.js";
import { packPackets } from "../../native/lib/packets.js";

// Each worker loads the addon, says so, waits until every worker has loaded it (so every
// instance's init has run before any decode), then opens a decoder and decodes the whole video
// `rounds` times, answering the md5 of each frame's bytes.
const WORKER = `
const { createHash } = require("node:crypto");
const { parentPort, workerData: w } = require("node:worker_threads");
const binding = require(w.addon);
parentPort.postMessage({ loaded: true });
parentPort.once("message", async () => {
  try {
    const md5s = [];
    for (let round = 0; round < w.rounds; round++) {
      const decoder = await binding.openDecoder({ ...w.options, extradata: new Uint8Array(w.options.extradata) });
      const out = await decoder.decode(new Uint8Array(w.data), new Float64Array(w.table), new Uint8Array(w.keyframes), null, true);
      decoder.close();
      md5s.push(out.frames.map((f) => {
        const bytes = f.buffer ? new Uint8Array(f.buffer, 0, f.bytes) : new Uint8Array(out.buffer, f.offset, f.bytes);
        return createHash("md5").update(bytes).digest("hex");
      }));
    }
    parentPort.postMessage({ md5s });
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.stack || error) });
  }
});
`;

let dir: string;
let video: IndexedVideo;
let expected: string[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-native-workers-"));
  video = await indexedVideo(dir, { codec: "h264", width: 160, height: 96, frames: 24, bframes: 2 });
  expected = await ffmpegFrameMd5s(video.file);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function startWorker(
  addon: string,
  rounds: number,
): { worker: Worker; loaded: Promise<void>; done: Promise<string[][]> } {
  const t = video.track;
  const packed = packPackets(packetsFromTrack(t, video.bytes, 0, 0, t.samples.size.length));
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: {
      addon,
      rounds,
      options: {
        codec: t.codec,
        extradata: t.extradata,
        width: t.width,
        height: t.height,
        device: "cpu",
        deviceIndex: 0,
        threads: 1,
        output: "native",
        resizeHeight: 0,
        resizeWidth: 0,
      },
      data: packed.data,
      table: packed.table,
      keyframes: packed.keyframes,
    },
  });
  const exited = new Promise<never>((_, reject) => {
    worker.once("error", reject);
    worker.once("exit", (code) => reject(new Error(`Expected the worker to answer but it exited with ${code}`)));
  });
  const loaded = Promise.race([new Promise<void>((resolve) => worker.once("message", () => resolve())), exited]);
  const done = loaded.then(() =>
    Promise.race([
      new Promise<string[][]>((resolve, reject) =>
        worker.once("message", (m: { md5s?: string[][]; error?: string }) =>
          m.md5s ? resolve(m.md5s) : reject(new Error(m.error)),
        ),
      ),
      exited,
    ]),
  );
  return { worker, loaded, done };
}

describe("the addon in worker_threads", () => {
  it("loads in two workers and decodes in both at once, frame-exact, and still decodes here after they exit", async () => {
    const addon = addonCandidates().find((path) => existsSync(path));
    expect(addon, "a built addon").toBeDefined();
    // This thread holds its own instance throughout: loaded before the workers', used after they are gone.
    expect((await decodeAll(video)).map(frameMd5)).toEqual(expected);
    const workers = [startWorker(addon!, 3), startWorker(addon!, 3)];
    try {
      await Promise.all(workers.map((w) => w.loaded));
      for (const w of workers) w.worker.postMessage("go");
      const results = await Promise.all(workers.map((w) => w.done));
      for (const rounds of results) for (const md5s of rounds) expect(md5s).toEqual(expected);
    } finally {
      await Promise.all(workers.map((w) => w.worker.terminate()));
    }
    expect((await decodeAll(video)).map(frameMd5)).toEqual(expected);
  });
});
