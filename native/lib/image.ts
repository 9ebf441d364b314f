import { sniffImage } from "../../common/media-index/image.js";
import { argumentError, fromNative, NativeError, NativeErrorCode } from "./errors.js";
import { hostFrames, type HostFrame } from "./frames.js";
import { loadBinding } from "./load.js";
import { parseOutput, parseResize, type OutputFormat } from "./options.js";

export const IMAGE_FORMATS = ["jpeg", "png", "webp"] as const;
export type ImageFormat = (typeof IMAGE_FORMATS)[number];

export interface ImageDecodeOptions {
  /** The container's format; default: sniffed from the first bytes. */
  readonly format?: ImageFormat;
  /** Default "rgb24" ([H, W, 3] uint8); "rgbf32-planar" ([3, H, W] in [0, 1]); "native": the decoder's pixels (yuvj420p, rgba, gray...). */
  readonly output?: OutputFormat;
  /** [height, width] to scale to (libswscale, bilinear, as for video). */
  readonly resize?: readonly [number, number];
}

function formatOf(bytes: Uint8Array, format: unknown): ImageFormat {
  if (format !== undefined) {
    if (!IMAGE_FORMATS.includes(format as ImageFormat))
      throw argumentError(`one of ${IMAGE_FORMATS.join(", ")}`, "format", format);
    return format as ImageFormat;
  }
  const sniffed = sniffImage(bytes);
  if (!sniffed) {
    const head = Buffer.from(bytes.subarray(0, 8)).toString("hex");
    throw new NativeError(
      NativeErrorCode.UnsupportedImage,
      `Expected JPEG, PNG or WebP bytes but received ${bytes.length} bytes starting ${head || "(none)"}`,
    );
  }
  return sniffed;
}

/**
 * Decodes one whole image file (JPEG, PNG or WebP) with libavcodec off the event loop: the
 * same decoder core, conversion and resize as video frames. Damaged or truncated bytes reject
 * with ERR_CORRUPT_IMAGE, bytes of another format with ERR_UNSUPPORTED_IMAGE.
 *
 * @example
 * const frame = await decodeImage(await readFile("cat.jpg"), { resize: [224, 224] });
 * frame.shape; // [224, 224, 3]
 */
export async function decodeImage(bytes: Uint8Array, options: ImageDecodeOptions = {}): Promise<HostFrame> {
  if (!(bytes instanceof Uint8Array)) throw argumentError("a Uint8Array", "bytes", bytes);
  if (typeof options !== "object" || options === null)
    throw argumentError("an options object", "decodeImage options", options);
  const output = parseOutput(options.output, "rgb24");
  const [h, w] = parseResize(options.resize);
  const format = formatOf(bytes, options.format);
  const binding = loadBinding();
  try {
    const [frame] = hostFrames(await binding.decodeImage(bytes, format, output, h, w));
    return frame!;
  } catch (error) {
    throw fromNative(error);
  }
}
