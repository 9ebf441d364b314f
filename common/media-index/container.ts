/**
 * Containers recognised by their first bytes that ec does not stream: named in the
 * ERR_KIND_UNSUPPORTED record so that an object is never skipped without a word.
 */

/** What ec streams, for messages about what it does not. */
export const STREAMED_FORMATS =
  "MP4/MOV and Matroska/WebM video (H.264, HEVC, AV1, VP8, VP9), MPEG-TS video (H.264, HEVC), JPEG/PNG/WebP images and .npy arrays";

const ascii = (head: Uint8Array, at: number, length: number) => String.fromCharCode(...head.subarray(at, at + length));
const bytesAt = (head: Uint8Array, at: number, bytes: readonly number[]) =>
  head.length >= at + bytes.length && bytes.every((b, i) => head[at + i] === b);

const containers = new Map<string, (head: Uint8Array) => boolean>([
  ["MPEG-PS", (h) => bytesAt(h, 0, [0x00, 0x00, 0x01, 0xba])],
  ["AVI", (h) => ascii(h, 0, 4) === "RIFF" && ascii(h, 8, 4) === "AVI "],
  ["WAV audio", (h) => ascii(h, 0, 4) === "RIFF" && ascii(h, 8, 4) === "WAVE"],
  ["FLV", (h) => ascii(h, 0, 3) === "FLV" && h[3] === 1],
  ["Ogg", (h) => ascii(h, 0, 4) === "OggS"],
  ["ASF/WMV", (h) => bytesAt(h, 0, [0x30, 0x26, 0xb2, 0x75, 0x8e, 0x66, 0xcf, 0x11])],
  ["GIF", (h) => ascii(h, 0, 6) === "GIF87a" || ascii(h, 0, 6) === "GIF89a"],
  ["TIFF", (h) => ascii(h, 0, 4) === "II*\u0000" || ascii(h, 0, 4) === "MM\u0000*"],
  ["MP3 audio", (h) => ascii(h, 0, 3) === "ID3"],
  ["FLAC audio", (h) => ascii(h, 0, 4) === "fLaC"],
  // Annex B start code and a first NAL unit of an SPS (H.264), or VPS/AUD (HEVC) or AUD (H.264).
  [
    "a raw H.264 elementary stream",
    (h) => bytesAt(h, 0, [0, 0, 0, 1]) && !(h[4]! & 0x80) && [7, 9].includes(h[4]! & 0x1f),
  ],
  [
    "a raw HEVC elementary stream",
    (h) => bytesAt(h, 0, [0, 0, 0, 1]) && (bytesAt(h, 4, [0x40, 0x01]) || bytesAt(h, 4, [0x46, 0x01])),
  ],
]);

/**
 * The container an object's first bytes announce among those ec recognises but does not
 * stream, or undefined.
 *
 * @example
 * sniffContainer(head); // "AVI"
 */
export function sniffContainer(head: Uint8Array): string | undefined {
  for (const [name, sniff] of containers) if (sniff(head)) return name;
  return undefined;
}
