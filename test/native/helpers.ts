/** Fixtures for native tests: a video made by ffmpeg, its index, and ffmpeg's own framemd5. */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";

import { buildIndex, bytesReader } from "../../common/media-index/index.js";
import { expect } from "vitest";

import {
  createDecoder,
  type Decoder,
  NativeError,
  packetsFromTrack,
  type DecoderOptions,
  type Packets,
  type Frame,
  type HostFrame,
} from "../../native/index.js";
import type { VideoTrackV1 } from "../../common/schema/index.js";
import { ffmpegFrameMd5s as frameMd5sOf } from "../helpers/ffmpeg-md5.js";
import { makeVideo, type MakeVideoOptions } from "../helpers/make-video.js";

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

/**
 * Writes what a child process needs to open a decoder on `v` and decode all of it (file, codec,
 * extradata, size, the sample table as offset/size/pts/dts quadruples, keyframes) as JSON under
 * `dir`, with `extra` fields; returns its path.
 */
export async function writeDecodeSpec(
  dir: string,
  name: string,
  v: Pick<IndexedVideo, "file" | "track">,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const t = v.track;
  const table: number[] = [];
  for (let i = 0; i < t.samples.size.length; i++)
    table.push(t.samples.offset[i]!, t.samples.size[i]!, t.samples.pts[i]!, t.samples.dts[i]!);
  const spec = join(dir, name);
  const fields = { file: v.file, codec: t.codec, extradata: [...t.extradata], width: t.width, height: t.height };
  await writeFile(spec, JSON.stringify({ ...fields, ...extra, table, keys: [...t.samples.keyframe] }));
  return spec;
}

/** ffmpeg's md5 of every frame of the first video stream (`ffmpegFrameMd5s`); `extra` goes before -i. */
export function ffmpegFrameMd5s(file: string, extra: string[] = []): Promise<string[]> {
  return frameMd5sOf(file, { input: extra });
}

/** Packets first .. first + count - 1 of the video's track, rebased to their own bytes (a run fed in pieces). */
export function packetsPart(v: Pick<IndexedVideo, "track" | "bytes">, first: number, count: number): Packets {
  const s = v.track.samples;
  const start = s.offset[first]!;
  const end = s.offset[first + count - 1]! + s.size[first + count - 1]!;
  return packetsFromTrack(v.track, v.bytes.subarray(start, end), start, first, count);
}

/** A decoder for the video's track (codec, extradata and size from its index) with `extra` options. */
export function decoderFor(v: Pick<IndexedVideo, "track">, extra: Partial<DecoderOptions> = {}): Promise<Decoder> {
  const t = v.track;
  return createDecoder({ codec: t.codec, extradata: t.extradata, width: t.width, height: t.height, ...extra });
}

/** Every frame of the video, decoded in one call by a fresh decoder with `extra` options (host frames unless a device says otherwise). */
export async function decodeAll<F extends Frame = HostFrame>(
  v: IndexedVideo,
  extra: Partial<DecoderOptions> = {},
): Promise<F[]> {
  const t = v.track;
  const decoder = await decoderFor(v, extra);
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
