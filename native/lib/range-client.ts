/**
 * Ranged GETs on libcurl inside the addon (src/range-client.h), for the origin-cache's native
 * upstream client: a thread of its own, bodies written straight into the caller's buffers,
 * events in batches. libcurl is loaded at first use; where it is not on the host,
 * `libcurlStatus().loaded` is false and opening a client throws ERR_LIBCURL_UNAVAILABLE.
 */
import {
  RANGE_FLAGS,
  type RawRangeClient,
  type RawRangeClientOptions,
  type RawRangeEvent,
  type RawRangeExtra,
} from "./binding-types.js";
import { fromNative } from "./errors.js";
import { loadBinding } from "./load.js";

export type {
  RawRangeClient as RangeClient,
  RawRangeClientOptions as RangeClientOptions,
  RawRangeEvent as RangeEvent,
  RawRangeExtra as RangeExtra,
};

/** Event `i` of a batch as one object (for the few that are not progress reports). */
export function rangeEvent(nums: Float64Array, extras: (RawRangeExtra | undefined)[], i: number): RawRangeEvent {
  const flags = nums[4 * i + 3] as number;
  return {
    id: nums[4 * i] as number,
    kind: nums[4 * i + 1] as 0 | 1 | 2,
    bytes: nums[4 * i + 2] as number,
    status: flags & 0xffff,
    accepted: (flags & RANGE_FLAGS.accepted) !== 0,
    h2: (flags & RANGE_FLAGS.h2) !== 0,
    cut: (flags & RANGE_FLAGS.cut) !== 0,
    ...extras[i],
  };
}

/** Whether libcurl loads here, its version, or why not (the addon itself not loading is a reason too). */
export function libcurlStatus(): { loaded: boolean; library: string; reason?: string; version?: string } {
  try {
    return loadBinding().libcurlStatus();
  } catch (error) {
    return { loaded: false, library: process.env.EC_LIBCURL || "libcurl.so.4", reason: (error as Error).message };
  }
}

/**
 * A client whose `onEvents` hears every event of its requests, in order, in batches (four
 * numbers an event in `nums`: id, kind, bytes, status and flags; `rangeEvent` decodes one).
 *
 * @example
 * const client = openRangeClient({ connections: 8, streamsPerConnection: 100, connectTimeoutMs: 10_000,
 *   headersTimeoutMs: 30_000, bodyTimeoutMs: 30_000, verify: true }, (events) => {});
 */
export function openRangeClient(
  options: RawRangeClientOptions,
  onEvents: (nums: Float64Array, extras: (RawRangeExtra | undefined)[]) => void,
): RawRangeClient {
  const binding = loadBinding();
  try {
    return new binding.RangeClient(options, onEvents);
  } catch (error) {
    throw fromNative(error);
  }
}
