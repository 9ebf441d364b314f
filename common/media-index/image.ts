import type { ImageInfoV1 } from "../schema/index.js";
import { IndexErrorCode, MediaIndexError } from "./errors.js";
import type { HeadCachedReader } from "./range-reader.js";

type ImageFormat = ImageInfoV1["format"];

/** Which image format the first bytes announce, if any. */
export function sniffImage(head: Uint8Array): ImageFormat | undefined {
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return "jpeg";
  if (head.length >= 8 && [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a].every((b, i) => head[i] === b)) return "png";
  if (head.length >= 12 && ascii(head, 0, 4) === "RIFF" && ascii(head, 8, 4) === "WEBP") return "webp";
  return undefined;
}

function ascii(bytes: Uint8Array, at: number, length: number): string {
  return String.fromCharCode(...bytes.subarray(at, at + length));
}

const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);

// Start-of-frame markers carry the dimensions; C4 (DHT), C8 (JPG) and CC (DAC) share the range but do not.
const isSof = (m: number) => m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;

async function jpeg(reader: HeadCachedReader): Promise<ImageInfoV1> {
  let pos = 2;
  // Segments are walked by their length fields, so a large EXIF block costs one extra read, not its bytes.
  for (let guard = 0; guard < 4096; guard++) {
    const marker = await reader.read(pos, 4);
    if (marker[0] !== 0xff)
      throw new MediaIndexError(
        IndexErrorCode.CORRUPT,
        `expected a JPEG marker at byte ${pos} but found 0x${marker[0]!.toString(16)}`,
      );
    const code = marker[1]!;
    if (code === 0xff) {
      pos += 1;
      continue;
    }
    if ((code >= 0xd0 && code <= 0xd7) || code === 0x01) {
      pos += 2;
      continue;
    }
    if (code === 0xda || code === 0xd9) break;
    const length = view(marker).getUint16(2);
    if (isSof(code)) {
      const sof = await reader.read(pos + 4, 6);
      const v = view(sof);
      const height = v.getUint16(1),
        width = v.getUint16(3),
        channels = sof[5]!;
      if (!width || !height || !channels)
        throw new MediaIndexError(
          IndexErrorCode.CORRUPT,
          `JPEG frame header says ${width}x${height} with ${channels} components`,
        );
      return { format: "jpeg", width, height, channels };
    }
    pos += 2 + length;
  }
  throw new MediaIndexError(IndexErrorCode.CORRUPT, "JPEG has no start-of-frame header before its scan data");
}

const pngChannels = new Map([
  [0, 1],
  [2, 3],
  [3, 3],
  [4, 2],
  [6, 4],
]);

async function png(reader: HeadCachedReader): Promise<ImageInfoV1> {
  const ihdr = await reader.read(8, 18);
  if (ascii(ihdr, 4, 4) !== "IHDR")
    throw new MediaIndexError(IndexErrorCode.CORRUPT, "PNG does not start with an IHDR chunk");
  const v = view(ihdr);
  const width = v.getUint32(8),
    height = v.getUint32(12);
  const channels = pngChannels.get(ihdr[17]!);
  if (!width || !height || !channels)
    throw new MediaIndexError(IndexErrorCode.CORRUPT, `PNG header says ${width}x${height}, color type ${ihdr[17]}`);
  return { format: "png", width, height, channels };
}

async function webp(reader: HeadCachedReader): Promise<ImageInfoV1> {
  const head = await reader.read(0, 30);
  const chunk = ascii(head, 12, 4);
  const v = view(head);
  let width = 0,
    height = 0,
    channels = 3;
  if (chunk === "VP8 ") {
    width = v.getUint16(26, true) & 0x3fff;
    height = v.getUint16(28, true) & 0x3fff;
  } else if (chunk === "VP8L") {
    const bits = v.getUint32(21, true);
    width = (bits & 0x3fff) + 1;
    height = ((bits >>> 14) & 0x3fff) + 1;
    channels = (bits >>> 28) & 1 ? 4 : 3;
  } else if (chunk === "VP8X") {
    channels = head[20]! & 0x10 ? 4 : 3;
    const u24 = (at: number) => head[at]! | (head[at + 1]! << 8) | (head[at + 2]! << 16);
    width = u24(24) + 1;
    height = u24(27) + 1;
  } else {
    throw new MediaIndexError(IndexErrorCode.CORRUPT, `unknown WebP chunk ${JSON.stringify(chunk)}`);
  }
  if (!width || !height) throw new MediaIndexError(IndexErrorCode.CORRUPT, `WebP header says ${width}x${height}`);
  return { format: "webp", width, height, channels };
}

const parsers: Record<ImageFormat, (r: HeadCachedReader) => Promise<ImageInfoV1>> = { jpeg, png, webp };

/** Dimensions and channels from an image's header; the pixel data is never read. */
export function indexImage(reader: HeadCachedReader, format: ImageFormat): Promise<ImageInfoV1> {
  return parsers[format](reader);
}
