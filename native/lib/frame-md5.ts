import { createHash } from "node:crypto";

import { frameBytes, type HostFrame } from "./frames.js";

/**
 * The md5 of a frame exactly as ffmpeg's framemd5 computes it: over the planes' visible
 * bytes, row by row, no padding (the rawvideo packet, av_image_copy_to_buffer with
 * align 1) — which is the packed layout of a native HostFrame's data. This is the one
 * definition; `ec decode --framemd5` and `ec stream --md5` both use it.
 *
 * @example
 * const md5 = frameMd5(frame); // compare with the last column of `ffmpeg -i f.mp4 -f framemd5 -`
 */
export function frameMd5(frame: HostFrame): string {
  return createHash("md5").update(frameBytes(frame)).digest("hex");
}

/** The header ffmpeg's framemd5 muxer (version 2) writes for one video stream. */
export function framemd5Header(o: { timebase: [number, number]; width: number; height: number }): string[] {
  return [
    "#format: frame checksums",
    "#version: 2",
    "#hash: MD5",
    `#tb 0: ${o.timebase[0]}/${o.timebase[1]}`,
    "#media_type 0: video",
    "#codec_id 0: rawvideo",
    `#dimensions 0: ${o.width}x${o.height}`,
    "#sar 0: 1/1",
    "#stream#, dts,        pts, duration,     size, hash",
  ];
}

/** One framemd5 line: "0,          0,          0,        1,    57600, <md5>". */
export function framemd5Line(o: {
  stream?: number;
  dts: number;
  pts: number;
  duration: number;
  size: number;
  md5: string;
}): string {
  const pad = (v: number, n: number) => String(v).padStart(n, " ");
  return `${o.stream ?? 0}, ${pad(o.dts, 10)}, ${pad(o.pts, 10)}, ${pad(o.duration, 8)}, ${pad(o.size, 8)}, ${o.md5}`;
}
