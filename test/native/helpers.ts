/** Fixtures for native tests: a video made by ffmpeg, its index, and ffmpeg's own framemd5. */
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";

import { buildIndex, bytesReader } from "../../common/media-index/index.js";
import { expect } from "vitest";

import {
  createDecoder,
  NativeError,
  packetsFromTrack,
  type DecoderOptions,
  type Frame,
  type HostFrame,
} from "../../native/index.js";
import type { VideoTrackV1 } from "../../common/schema/index.js";
import { makeVideo, type MakeVideoOptions } from "../helpers/make-video.js";

const run = promisify(execFile);

export interface IndexedVideo {
  file: string;
  bytes: Uint8Array;
  track: VideoTrackV1;
}

export async function indexedVideo(dir: string, options: MakeVideoOptions): Promise<IndexedVideo> {
  const file = await makeVideo(dir, options);
  const bytes = new Uint8Array(await readFile(file));
  const index = await buildIndex(bytesReader(bytes), { key: file, etag: "test" });
  if (!index.video) throw new Error(`no video track in ${file}: ${JSON.stringify(index.error)}`);
  return { file, bytes, track: index.video };
}

/** The md5 column of `ffmpeg -i FILE -map 0:v:0 -f framemd5 -` (extra args go before -f). */
export async function ffmpegFrameMd5s(file: string, extra: string[] = []): Promise<string[]> {
  const { stdout } = await run(
    "ffmpeg",
    ["-v", "error", ...extra, "-i", file, "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "framemd5", "-"],
    {
      maxBuffer: 64 << 20,
    },
  );
  return stdout
    .split("\n")
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => line.split(",").at(-1)!.trim());
}

/** Every frame of the video, decoded in one call by a fresh decoder with `extra` options (host frames unless a device says otherwise). */
export async function decodeAll<F extends Frame = HostFrame>(
  v: IndexedVideo,
  extra: Partial<DecoderOptions> = {},
): Promise<F[]> {
  const t = v.track;
  const decoder = await createDecoder({
    codec: t.codec,
    extradata: t.extradata,
    width: t.width,
    height: t.height,
    ...extra,
  });
  try {
    return (await decoder.decode(packetsFromTrack(t, v.bytes, 0, 0, t.samples.size.length))) as F[];
  } finally {
    await decoder.close();
  }
}

/** Resolves to the error's code; fails the test when the promise resolves. */
export async function codeOf(p: Promise<unknown>): Promise<string> {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, "expected a rejection").toBeInstanceOf(NativeError);
  return (error as NativeError).code;
}
