/**
 * Sample counts checked against the bytes that must back them, before mp4box sees the header:
 * mp4box fills one array slot per declared sample, so a constant-size stsz (or a trun) that
 * claims billions of samples would grow an array until V8 aborts the whole process (a fatal
 * error, not an exception), taking a Worker or a training job down with one bad file.
 */
import { IndexErrorCode, MediaIndexError } from "./errors.js";

/** 2^24 frames is over a week of 25 fps video in one track; beyond is corruption, not video. */
export const MAX_SAMPLES = 1 << 24;

const CONTAINERS = new Set(["moov", "trak", "mdia", "minf", "stbl", "moof", "traf"]);

function corrupt(message: string): MediaIndexError {
  return new MediaIndexError(IndexErrorCode.CORRUPT, message);
}

function walk(view: DataView, from: number, to: number, objectSize: number): void {
  let pos = from;
  while (pos + 8 <= to) {
    let size = view.getUint32(pos);
    let header = 8;
    if (size === 1 && pos + 16 <= to) {
      size = Number(view.getBigUint64(pos + 8));
      header = 16;
    } else if (size === 0) {
      size = to - pos;
    }
    if (size < header || pos + size > to) return; // mp4box reports the broken box itself
    const type = String.fromCharCode(view.getUint8(pos + 4), view.getUint8(pos + 5), view.getUint8(pos + 6), view.getUint8(pos + 7));
    const body = pos + header;
    const end = pos + size;
    if (CONTAINERS.has(type)) walk(view, body, end, objectSize);
    else if (type === "stsz" && body + 12 <= end) checkStsz(view, body, end, objectSize);
    else if (type === "trun" && body + 8 <= end) checkTrun(view, body, end);
    pos = end;
  }
}

function checkStsz(view: DataView, body: number, end: number, objectSize: number): void {
  const sampleSize = view.getUint32(body + 4);
  const count = view.getUint32(body + 8);
  const bound = sampleSize === 0 ? Math.floor((end - body - 12) / 4) : Math.floor(objectSize / sampleSize);
  if (count > Math.min(bound, MAX_SAMPLES)) {
    throw corrupt(`stsz declares ${count} samples${sampleSize ? ` of ${sampleSize} bytes` : ""}, more than the ${sampleSize ? "object" : "box"} can hold (${Math.min(bound, MAX_SAMPLES)})`);
  }
}

function checkTrun(view: DataView, body: number, end: number): void {
  const flags = view.getUint32(body) & 0xffffff;
  const count = view.getUint32(body + 4);
  let perSample = 0;
  for (const bit of [0x100, 0x200, 0x400, 0x800]) if (flags & bit) perSample += 4;
  const bound = perSample === 0 ? MAX_SAMPLES : Math.floor((end - body - 8) / perSample);
  if (count > Math.min(bound, MAX_SAMPLES)) throw corrupt(`trun declares ${count} samples, more than its ${end - body} bytes can hold`);
}

/**
 * Throws ERR_CORRUPT_MEDIA when a stsz or trun in the glued header boxes declares more
 * samples than the bytes behind it can hold.
 *
 * @example
 * checkSampleBounds(gluedHeaderBytes, objectSize);
 */
export function checkSampleBounds(header: Uint8Array, objectSize: number): void {
  walk(new DataView(header.buffer, header.byteOffset, header.byteLength), 0, header.byteLength, objectSize);
}
