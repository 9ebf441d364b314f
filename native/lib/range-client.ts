/**
 * Ranged GETs on libcurl inside the addon (src/range-client.h), for the origin-cache's native
 * upstream client: a thread of its own, bodies written straight into the caller's buffers,
 * events in batches. libcurl is loaded at first use; where it is not on the host,
 * `libcurlStatus().loaded` is false and opening a client throws ERR_LIBCURL_UNAVAILABLE.
 */
import type { RawRangeClient, RawRangeClientOptions, RawRangeEvent } from "./binding-types.js";
import { fromNative } from "./errors.js";
import { loadBinding } from "./load.js";

export type { RawRangeClient as RangeClient, RawRangeClientOptions as RangeClientOptions, RawRangeEvent as RangeEvent };

/** Whether libcurl loads here, its version, or why not (the addon itself not loading is a reason too). */
export function libcurlStatus(): { loaded: boolean; library: string; reason?: string; version?: string } {
  try {
    return loadBinding().libcurlStatus();
  } catch (error) {
    return { loaded: false, library: process.env.EC_LIBCURL || "libcurl.so.4", reason: (error as Error).message };
  }
}

/**
 * A client whose `onEvents` hears every event of its requests, in order, in batches.
 *
 * @example
 * const client = openRangeClient({ connections: 8, streamsPerConnection: 100, connectTimeoutMs: 10_000,
 *   headersTimeoutMs: 30_000, bodyTimeoutMs: 30_000, verify: true }, (events) => {});
 */
export function openRangeClient(
  options: RawRangeClientOptions,
  onEvents: (events: RawRangeEvent[]) => void,
): RawRangeClient {
  const binding = loadBinding();
  try {
    return new binding.RangeClient(options, onEvents);
  } catch (error) {
    throw fromNative(error);
  }
}
