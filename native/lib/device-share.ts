/**
 * Device memory shared with another process (the Python client's CUDA tensors): device frames
 * packed into an allocDevice() buffer with device-to-device copies, and the buffer's CUDA IPC
 * handle, which the other process opens to read the same memory without a trip through the host.
 */
import { argumentError, fromNative } from "./errors.js";
import { deviceFrameHandle, type DeviceFrame } from "./frames.js";
import { loadBinding } from "./load.js";
import { parseDevice } from "./options.js";
import type { DeviceBuffer } from "./read-into.js";

const BYTES_PER_SAMPLE = { uint8: 1, uint16: 2, float32: 4 } as const;

/** Rows and bytes per row of each plane of a frame packed without padding (the host layout). */
export function packedPlanes(
  frame: Pick<DeviceFrame, "format" | "width" | "height" | "dtype">,
): { rows: number; rowBytes: number }[] {
  const bps = BYTES_PER_SAMPLE[frame.dtype];
  const { width: w, height: h } = frame;
  if (frame.format === "rgb24") return [{ rows: h, rowBytes: w * 3 }];
  if (frame.format === "rgbf32-planar") return [0, 1, 2].map(() => ({ rows: h, rowBytes: w * bps }));
  // NVDEC surfaces (nv12, p010le, p016le): luma, then interleaved chroma at half height.
  return [
    { rows: h, rowBytes: w * bps },
    { rows: Math.ceil(h / 2), rowBytes: Math.ceil(w / 2) * 2 * bps },
  ];
}

/** Bytes of a frame packed by `packDeviceFrame`. */
export function packedBytes(frame: Pick<DeviceFrame, "format" | "width" | "height" | "dtype">): number {
  return packedPlanes(frame).reduce((n, p) => n + p.rows * p.rowBytes, 0);
}

/**
 * Copies a device frame, plane by plane without row padding, to `offset` in `target` (same
 * device) and returns the bytes written; the copy has finished when it returns.
 *
 * @example
 * let at = 0; for (const f of clip.gpuFrames) at += packDeviceFrame(slot, at, f);
 */
export function packDeviceFrame(target: DeviceBuffer, offset: number, frame: DeviceFrame): number {
  deviceFrameHandle(frame); // a frame this loader made, still alive
  if (frame.device !== target.device) throw argumentError(`a frame on ${target.device}`, "frame", frame.device);
  const planes = packedPlanes(frame);
  const bytes = packedBytes(frame);
  if (!Number.isSafeInteger(offset) || offset < 0 || offset + bytes > target.byteLength) {
    throw argumentError(`an offset with room for ${bytes} bytes in ${target.byteLength}`, "offset", offset);
  }
  const index = parseDevice(target.device).index;
  const binding = loadBinding();
  let at = offset;
  try {
    planes.forEach((p, i) => {
      const src = frame.planes[i] ?? { pointer: frame.pointer, pitch: frame.pitch };
      binding.copyDevice2D(index, target.pointer + BigInt(at), p.rowBytes, src.pointer, src.pitch, p.rowBytes, p.rows);
      at += p.rows * p.rowBytes;
    });
  } catch (error) {
    throw fromNative(error);
  }
  return bytes;
}

/**
 * The 64-byte CUDA IPC handle of a device buffer: another process opens it with
 * cuIpcOpenMemHandle (the buffer must stay alive meanwhile).
 *
 * @example
 * const handle = ipcHandle(allocDevice("cuda:0", 1 << 20));
 */
export function ipcHandle(buffer: DeviceBuffer): Uint8Array {
  const d = parseDevice(buffer.device);
  try {
    return loadBinding().ipcHandle(d.index, buffer.pointer);
  } catch (error) {
    throw fromNative(error);
  }
}
