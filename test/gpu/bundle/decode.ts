/** One whole-file decode on a device, and frames as NVDEC lays them out, for framemd5 equality. */
import { createHash } from "node:crypto";

import type { VideoTrackV1 } from "../../../common/schema/index.js";
import {
  createDecoder,
  frameMd5,
  packetsFromTrack,
  type DecoderOptions,
  type DeviceFrame,
  type DeviceName,
  type Frame,
  type HostFrame,
} from "../../../native/index.js";
import type { Layout } from "./shared.js";

export interface Video {
  track: VideoTrackV1;
  bytes: Uint8Array;
}

/** Every frame of the file in one decode call by a fresh decoder with `extra` options. */
export async function decodeFrames(video: Video, extra: Partial<DecoderOptions> = {}): Promise<Frame[]> {
  const t = video.track;
  const decoder = await createDecoder({
    codec: t.codec,
    extradata: t.extradata,
    width: t.width,
    height: t.height,
    ...extra,
  });
  try {
    return await decoder.decode(packetsFromTrack(t, video.bytes, 0, 0, t.samples.size.length));
  } finally {
    await decoder.close();
  }
}

/** Every native frame of the file on `device`, as host frames (device frames copied back with toHost()). */
export async function decodeOn(video: Video, device: DeviceName): Promise<HostFrame[]> {
  const frames = await decodeFrames(video, { device });
  return Promise.all(frames.map((f) => (f.kind === "device" ? (f as DeviceFrame).toHost() : f)));
}

/**
 * The md5 of each frame as `ffmpeg -pix_fmt nv12|p010le -f framemd5` hashes it: NVDEC's own
 * frames as they are, the CPU decoder's planar yuv420p / yuv420p10le repacked (chroma
 * interleaved; 10-bit samples in the high bits).
 */
export function nvdecLayoutMd5s(frames: readonly HostFrame[], layout: Layout): string[] {
  return frames.map((f) => {
    if (f.format === layout) return frameMd5(f);
    const planar = layout === "nv12" ? "yuv420p" : "yuv420p10le";
    if (f.format !== planar) throw new Error(`Expected ${layout} or ${planar} frames but received ${f.format}`);
    const shift = layout === "nv12" ? 0 : 6;
    const size = layout === "nv12" ? 1 : 2;
    const bytes = new Uint8Array(f.data.buffer, f.data.byteOffset, f.data.byteLength);
    // Plane offsets and row lengths are in bytes; each plane's rows are packed.
    const plane = (p: number) => {
      const { offset, rowBytes, rows } = f.planes[p]!;
      const view = bytes.subarray(offset, offset + rowBytes * rows);
      return size === 1 ? view : new Uint16Array(view.buffer, view.byteOffset, view.byteLength / 2);
    };
    const [y, u, v] = [plane(0), plane(1), plane(2)];
    const dst = new (size === 1 ? Uint8Array : Uint16Array)(y.length + u.length + v.length);
    for (let i = 0; i < y.length; i++) dst[i] = y[i]! << shift;
    for (let i = 0; i < u.length; i++) {
      dst[y.length + 2 * i] = u[i]! << shift;
      dst[y.length + 2 * i + 1] = v[i]! << shift;
    }
    return createHash("md5").update(new Uint8Array(dst.buffer)).digest("hex");
  });
}
