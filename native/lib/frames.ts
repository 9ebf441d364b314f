import type { RawDeviceFrame, RawHostBatch, RawPlane } from "./binding-types.js";
import { loadBinding } from "./load.js";
import { fromNative, NativeArgumentError } from "./errors.js";

export type Dtype = "uint8" | "uint16" | "float32";

/** A decoded frame in host memory. */
export interface HostFrame {
  readonly kind: "host";
  /** Presentation timestamp, in the track's timescale. */
  readonly pts: number;
  readonly width: number;
  readonly height: number;
  /** "yuv420p", "yuv420p10le", "nv12", ... for native output; "rgb24" or "rgbf32-planar" otherwise. */
  readonly format: string;
  /** native: [height, width] of luma (see planes); rgb24: [H, W, 3]; rgbf32-planar: [3, H, W]. */
  readonly shape: readonly number[];
  readonly dtype: Dtype;
  /**
   * Planes packed row by row, no padding: a view into the call's one allocation, or (native
   * output decoded in place, e.g. h264 1280×720) into a buffer of the frame's own.
   */
  readonly data: Uint8Array | Uint16Array | Float32Array;
  /** Byte layout of each plane inside `data`. */
  readonly planes: readonly RawPlane[];
  readonly device: "cpu";
}

/**
 * A frame that stays in GPU memory: an NVDEC surface (output "native") or a frame converted on
 * the GPU (output "rgb24" / "rgbf32-planar", optionally resized). Valid while this object is reachable.
 */
export interface DeviceFrame {
  readonly kind: "device";
  readonly pts: number;
  readonly width: number;
  readonly height: number;
  /** The surface format ("nv12", "p010le", "p016le") or the converted one ("rgb24", "rgbf32-planar"). */
  readonly format: string;
  /** CUdeviceptr of the first (luma) plane, in the device's primary context. */
  readonly pointer: bigint;
  /** Bytes between rows of the first plane. */
  readonly pitch: number;
  readonly planes: readonly { pointer: bigint; pitch: number }[];
  /** native: [height, width] of luma; rgb24: [H, W, 3]; rgbf32-planar: [3, H, W]. */
  readonly shape: readonly number[];
  readonly dtype: Dtype;
  readonly device: `cuda:${number}`;
  /** Copies the frame to host memory, packed as the CPU path returns it. */
  toHost(): Promise<HostFrame>;
}

export type Frame = HostFrame | DeviceFrame;

function dtypeOf(format: string): Dtype {
  if (format === "rgbf32-planar") return "float32";
  return /(9|10|12|14|16)(le|be)$|^p0(10|16)/.test(format) ? "uint16" : "uint8";
}

/**
 * Views over the batch's allocation, a frame's own buffer (decoded in place, or its view of a
 * batch past 4 GiB), or the caller's region (`targets`) it was written into: no copy of pixel data.
 */
export function hostFrames(batch: RawHostBatch, targets?: readonly Uint8Array[]): HostFrame[] {
  return batch.frames.map((f) => {
    const dtype = dtypeOf(f.format);
    const region = f.target !== undefined ? targets?.[f.target] : undefined;
    const buffer = region?.buffer ?? f.buffer ?? batch.buffer;
    const offset = region ? region.byteOffset : f.offset;
    const data =
      dtype === "float32"
        ? new Float32Array(buffer, offset, f.bytes / 4)
        : dtype === "uint16"
          ? new Uint16Array(buffer, offset, f.bytes / 2)
          : new Uint8Array(buffer, offset, f.bytes);
    const shape = shapeOf(f.format, f.height, f.width);
    return {
      kind: "host",
      pts: f.pts,
      width: f.width,
      height: f.height,
      format: f.format,
      shape,
      dtype,
      data,
      planes: f.planes,
      device: "cpu",
    };
  });
}

const handles = new WeakMap<DeviceFrame, object>();

/** The binding's handle of a device frame (internal: keeps the memory alive across native calls). */
export function deviceFrameHandle(frame: DeviceFrame): object {
  const handle = handles.get(frame);
  if (!handle) throw new NativeArgumentError("Expected a DeviceFrame returned by a decoder");
  return handle;
}

function shapeOf(format: string, height: number, width: number): number[] {
  return format === "rgb24" ? [height, width, 3] : format === "rgbf32-planar" ? [3, height, width] : [height, width];
}

export function deviceFrames(raw: RawDeviceFrame[]): DeviceFrame[] {
  return raw.map((f) => {
    const handle = f.handle;
    const first = f.planes[0] ?? { pointer: 0n, pitch: 0 };
    const frame: DeviceFrame = {
      kind: "device",
      pts: f.pts,
      width: f.width,
      height: f.height,
      format: f.format,
      pointer: first.pointer,
      pitch: first.pitch,
      planes: f.planes,
      shape: shapeOf(f.format, f.height, f.width),
      dtype: dtypeOf(f.format),
      device: `cuda:${f.device}`,
      async toHost(): Promise<HostFrame> {
        try {
          const [host] = hostFrames(await loadBinding().downloadFrame(handle));
          return host!;
        } catch (error) {
          throw fromNative(error);
        }
      },
    };
    handles.set(frame, handle);
    return frame;
  });
}

/** The frame's bytes, whatever its dtype (for hashing and writing out). */
export function frameBytes(frame: HostFrame): Uint8Array {
  return new Uint8Array(frame.data.buffer, frame.data.byteOffset, frame.data.byteLength);
}
