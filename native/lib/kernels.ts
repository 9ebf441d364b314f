/**
 * The GPU kernels' entry points that are not part of decoding: label statistics over frames
 * that live on the GPU, and the host twins of the kernels (the same arithmetic, run on the
 * CPU) that verify them on machines without a GPU.
 */
import type { LumaStats, RawLumaFrame } from "./binding-types.js";
import { argumentError, fromNative, NativeArgumentError } from "./errors.js";
import { deviceFrameHandle, hostFrames, type DeviceFrame, type HostFrame } from "./frames.js";
import { loadBinding } from "./load.js";
import { parseOutput, parseResize, type OutputFormat } from "./options.js";

export type { LumaStats };

/** A host frame as the twin reads it (the luma-first formats, rgb24, rgbf32-planar). */
export interface LumaHostFrame {
  readonly data: Uint8Array;
  readonly format: string;
  readonly width: number;
  readonly height: number;
  /** Bytes between rows of the first plane. */
  readonly pitch: number;
}

function checkStep(step: unknown): number {
  if (!Number.isInteger(step) || (step as number) < 1) throw argumentError("a positive integer", "step", step);
  return step as number;
}

/**
 * Label statistics of a clip's device frames, computed on their GPU (ec_luma_stats): only the
 * sums (~2 KB a frame) cross to the host. Every `step`-th pixel of every `step`-th row is read,
 * exactly as the CPU analysis in sdk/labels reads it.
 *
 * @example
 * const frames = await decoder.decode(clip); // device: "cuda:0"
 * const stats = await lumaStatsOnDevice(frames, 9);
 */
export async function lumaStatsOnDevice(frames: readonly DeviceFrame[], step: number): Promise<LumaStats[]> {
  checkStep(step);
  if (frames.length === 0) return [];
  const device = frames[0]!.device;
  const raw: RawLumaFrame[] = frames.map((f, i) => {
    if (f?.kind !== "device") throw argumentError("a DeviceFrame", `frames[${i}]`, f);
    if (f.device !== device)
      throw new NativeArgumentError(`Expected every frame on ${device} but frames[${i}] is on ${f.device}`);
    return { handle: deviceFrameHandle(f), format: f.format, width: f.width, height: f.height, pitch: f.pitch };
  });
  try {
    return await loadBinding().lumaStats(raw, step, Number(device.slice(5)));
  } catch (error) {
    throw fromNative(error);
  }
}

/**
 * The host twin of lumaStatsOnDevice: the kernel's arithmetic on the CPU, over host frames.
 *
 * @example
 * const [s] = await lumaStatsReference([{ data: luma, format: "gray", width: 64, height: 32, pitch: 64 }], 4);
 */
export async function lumaStatsReference(frames: readonly LumaHostFrame[], step: number): Promise<LumaStats[]> {
  checkStep(step);
  const raw: RawLumaFrame[] = frames.map((f, i) => {
    if (!(f?.data instanceof Uint8Array)) throw argumentError("a Uint8Array", `frames[${i}].data`, f?.data);
    return { data: f.data, format: f.format, width: f.width, height: f.height, pitch: f.pitch };
  });
  try {
    return await loadBinding().lumaStats(raw, step, -1);
  } catch (error) {
    throw fromNative(error);
  }
}

export interface ConvertReferenceOptions {
  readonly output: Exclude<OutputFormat, "native">;
  /** [height, width]; default: the frame's size. */
  readonly resize?: readonly [number, number];
  /** The frame's matrix (what the decoder reports); default "bt601". */
  readonly colorspace?: "bt601" | "bt709" | "bt2020";
  readonly fullRange?: boolean;
}

/**
 * The host twin of the GPU conversion (ec_convert) over a native YUV host frame: what a cuda
 * decoder with the same output and resize returns for the same decoded frame.
 *
 * @example
 * const [yuv] = await cpuDecoder.decode(clip);
 * const rgb = await convertReference(yuv as HostFrame, { output: "rgb24", resize: [224, 224] });
 */
export async function convertReference(frame: HostFrame, options: ConvertReferenceOptions): Promise<HostFrame> {
  if (frame?.kind !== "host") throw argumentError("a HostFrame", "frame", frame);
  const output = parseOutput(options.output, "rgb24");
  if (output === "native") throw argumentError('"rgb24" or "rgbf32-planar"', "output", options.output);
  const [height, width] = parseResize(options.resize);
  const data = new Uint8Array(frame.data.buffer, frame.data.byteOffset, frame.data.byteLength);
  try {
    const batch = await loadBinding().convertReference(
      { data, format: frame.format, width: frame.width, height: frame.height, planes: frame.planes },
      output,
      height,
      width,
      options.colorspace ?? "bt601",
      options.fullRange ?? false,
    );
    return { ...hostFrames(batch)[0]!, pts: frame.pts };
  } catch (error) {
    throw fromNative(error);
  }
}
