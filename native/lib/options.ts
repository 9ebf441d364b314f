import { argumentError } from "./errors.js";

export const CODECS = ["h264", "hevc", "av1", "vp9", "vp8"] as const;
export type Codec = (typeof CODECS)[number];

export const OUTPUTS = ["native", "rgb24", "rgbf32-planar"] as const;
export type OutputFormat = (typeof OUTPUTS)[number];

/** "cpu" or "cuda:N". */
export type DeviceName = "cpu" | `cuda:${number}`;

export interface DecoderOptions {
  readonly codec: Codec;
  /** The avcC / hvcC / av1C / vpcC payload from the index (`video.extradata`). */
  readonly extradata: Uint8Array;
  readonly width: number;
  readonly height: number;
  /** Default "cpu". */
  readonly device?: DeviceName;
  /** Decoder threads; 0 (default) lets libavcodec pick one per core. */
  readonly threads?: number;
  /** Default "native": the decoder's own pixel format (yuv420p, yuv420p10le, nv12...). */
  readonly output?: OutputFormat;
  /** [height, width] to scale every frame to (libswscale, bilinear). */
  readonly resize?: readonly [number, number];
}

export interface ResolvedDevice {
  backend: "cpu" | "cuda";
  index: number;
  name: DeviceName;
}

const MAX_SIDE = 16384;

function isInt(v: unknown, min: number, max: number): v is number {
  return typeof v === "number" && Number.isInteger(v) && v >= min && v <= max;
}

/** Parses "cpu" | "cuda:N"; throws ERR_INVALID_ARGUMENT otherwise. */
export function parseDevice(device: unknown, name = "device"): ResolvedDevice {
  if (device === undefined || device === "cpu") return { backend: "cpu", index: 0, name: "cpu" };
  const m = typeof device === "string" ? /^cuda:(\d{1,3})$/.exec(device) : null;
  if (!m) throw argumentError('"cpu" or "cuda:N"', name, device);
  const index = Number(m[1]);
  return { backend: "cuda", index, name: `cuda:${index}` };
}

/** One of OUTPUTS, `fallback` when absent; throws ERR_INVALID_ARGUMENT otherwise. */
export function parseOutput(output: unknown, fallback: OutputFormat): OutputFormat {
  const o = (output ?? fallback) as OutputFormat;
  if (!OUTPUTS.includes(o)) throw argumentError(`one of ${OUTPUTS.join(", ")}`, "output", output);
  return o;
}

/** [height, width] to scale to, or [0, 0] (keep the decoded size) when absent. */
export function parseResize(resize: unknown): [number, number] {
  if (resize === undefined) return [0, 0];
  const r = resize as unknown[];
  if (!Array.isArray(r) || r.length !== 2 || !isInt(r[0], 1, MAX_SIDE) || !isInt(r[1], 1, MAX_SIDE)) {
    throw argumentError(`[height, width] with integers in 1..${MAX_SIDE}`, "resize", resize);
  }
  return [r[0] as number, r[1] as number];
}

/** Validates createDecoder's options before anything reaches the addon. */
export function validateDecoderOptions(o: unknown) {
  if (typeof o !== "object" || o === null) throw argumentError("an options object", "createDecoder options", o);
  const opts = o as Record<string, unknown>;
  if (!CODECS.includes(opts.codec as Codec)) throw argumentError(`one of ${CODECS.join(", ")}`, "codec", opts.codec);
  if (!(opts.extradata instanceof Uint8Array)) throw argumentError("a Uint8Array", "extradata", opts.extradata);
  if (!isInt(opts.width, 1, MAX_SIDE)) throw argumentError(`an integer in 1..${MAX_SIDE}`, "width", opts.width);
  if (!isInt(opts.height, 1, MAX_SIDE)) throw argumentError(`an integer in 1..${MAX_SIDE}`, "height", opts.height);
  const device = parseDevice(opts.device);
  const threads = opts.threads ?? 0;
  if (!isInt(threads, 0, 256)) throw argumentError("an integer in 0..256", "threads", opts.threads);
  const output = parseOutput(opts.output, "native");
  const resize = parseResize(opts.resize);
  return {
    codec: opts.codec as Codec,
    extradata: opts.extradata,
    width: opts.width,
    height: opts.height,
    device,
    threads,
    output,
    resize,
  };
}
export type ValidatedDecoderOptions = ReturnType<typeof validateDecoderOptions>;
