import { argumentError, fromNative } from "./errors.js";
import { loadBinding } from "./load.js";

/**
 * The first `bytes` of an open file as memory shared with every other process that maps it (a
 * shared-memory slot under /dev/shm): what is written into the buffer is in the file, with no
 * write call. The mapping lives as long as the buffer (unmapped when it is collected), also after
 * `fd` is closed; the file must stay at least `bytes` long while it is used.
 *
 * @example
 * const memory = new Uint8Array(mapShared(openSync("/dev/shm/slot", "r+"), 1 << 20));
 */
export function mapShared(fd: number, bytes: number): ArrayBuffer {
  if (!Number.isSafeInteger(fd) || fd < 0) throw argumentError("an open file descriptor", "fd", fd);
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw argumentError("a positive integer", "bytes", bytes);
  try {
    return loadBinding().mapShared(fd, bytes);
  } catch (error) {
    throw fromNative(error);
  }
}
