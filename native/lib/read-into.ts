import { argumentError, fromNative } from "./errors.js";
import { loadBinding } from "./load.js";
import { parseDevice, type DeviceName } from "./options.js";

/** GPU memory owned by JS: freed when this object is garbage collected. */
export interface DeviceBuffer {
  readonly pointer: bigint;
  readonly byteLength: number;
  readonly device: DeviceName;
  /** Copies the whole buffer to host memory. */
  toHost(): Uint8Array;
}

export interface ReadResult {
  bytesRead: number;
  /** "cufile": GPUDirect Storage; "compat": pread into pinned memory + copy; "host": pread. */
  mode: "cufile" | "compat" | "host";
}

const owners = new WeakMap<DeviceBuffer, object>();

/**
 * Allocates `bytes` of device memory on "cuda:N" (a readInto target).
 *
 * @example
 * const target = allocDevice("cuda:0", 4 << 20);
 */
export function allocDevice(device: DeviceName, bytes: number): DeviceBuffer {
  const d = parseDevice(device);
  if (d.backend !== "cuda") throw argumentError('"cuda:N"', "device", device);
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw argumentError("a positive integer", "bytes", bytes);
  const binding = loadBinding();
  let raw: { pointer: bigint; handle: object };
  try {
    raw = binding.allocDevice(d.index, bytes);
  } catch (error) {
    throw fromNative(error);
  }
  const buffer: DeviceBuffer = {
    pointer: raw.pointer,
    byteLength: bytes,
    device: d.name,
    toHost() {
      const out = new Uint8Array(bytes);
      binding.copyDeviceToHost(d.index, raw.pointer, out);
      return out;
    },
  };
  owners.set(buffer, raw.handle);
  return buffer;
}

/**
 * Reads `length` bytes at `offset` of a local file (an origin-cache block) into `target`
 * and says which path ran. A Uint8Array target is read with pread ("host"); a device
 * buffer with cuFile where GPUDirect Storage works, else through pinned memory ("compat").
 * `bytesRead` is short only at end of file.
 *
 * @example
 * const { bytesRead, mode } = await readInto(blockPath, 0, 65536, new Uint8Array(65536));
 */
export async function readInto(
  path: string,
  offset: number,
  length: number,
  target: Uint8Array | DeviceBuffer,
): Promise<ReadResult> {
  if (typeof path !== "string" || path.length === 0) throw argumentError("a file path", "path", path);
  if (!Number.isSafeInteger(offset) || offset < 0) throw argumentError("a non-negative integer", "offset", offset);
  if (!Number.isSafeInteger(length) || length < 0) throw argumentError("a non-negative integer", "length", length);
  const binding = loadBinding();
  try {
    if (target instanceof Uint8Array) {
      if (target.byteLength < length)
        throw argumentError(`a target of at least ${length} bytes`, "target", `${target.byteLength} bytes`);
      return await binding.readIntoHost(path, offset, length, target);
    }
    const owner = owners.get(target);
    if (!owner) throw argumentError("a Uint8Array or a buffer from allocDevice()", "target", target);
    if (target.byteLength < length)
      throw argumentError(`a target of at least ${length} bytes`, "target", `${target.byteLength} bytes`);
    return await binding.readIntoDevice(path, offset, length, parseDevice(target.device).index, target.pointer, owner);
  } catch (error) {
    throw fromNative(error);
  }
}
