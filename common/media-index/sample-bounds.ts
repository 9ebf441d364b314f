/**
 * Sample counts bounded where mp4box parses them. mp4box fills one array slot per declared
 * sample, and reads no byte per slot when a stsz's size is constant or a trun carries no
 * per-sample field: a count of billions grows an array until V8 aborts the whole process (a
 * fatal error, not an exception), taking a Worker or a training job down with one bad file,
 * and tens of millions cost gigabytes and tens of seconds for a file of a few kilobytes.
 *
 * The guard runs inside mp4box's own stsz and trun parsers, so it sees every such box mp4box
 * parses, whatever framing led it there: a 64-bit size of 0 (parsed to the end of the data),
 * a size of 0 (to the end of its parent), a box inside an unexpected container. A walk of the
 * boxes beforehand has to mirror all of that, and missed the 64-bit case.
 */
import { BoxParser } from "mp4box";
import { IndexErrorCode, MediaIndexError } from "./errors.js";

/** 2^24 frames is over a week of 25 fps video in one file; beyond is corruption, not video. */
export const MAX_SAMPLES = 1 << 24;

/** The object being parsed, the samples its boxes have declared so far, and the most the build holds. */
interface Budget {
  objectSize: number;
  samples: number;
  maxSamples: number;
  /** The error for a file whose boxes declare more than maxSamples in all. */
  over: (message: string) => Error;
}
let budget: Budget | undefined;

/** What of mp4box's stream (a MultiBufferStream during a parse) the guards use. */
interface Stream {
  getPosition(): number;
  getEndPosition(): number;
  readUint32(): number;
  seek(position: number): unknown;
}

function corrupt(message: string): MediaIndexError {
  return new MediaIndexError(IndexErrorCode.CORRUPT, message);
}

/** Bytes a box's parser may read from `at`: to the box's end, or the data's for a size of 0. */
function available(box: { start?: number; size: number }, stream: Stream, at: number): number {
  const end = box.size > 0 && box.start !== undefined ? box.start + box.size : stream.getEndPosition();
  return Math.max(0, Math.min(end, stream.getEndPosition()) - at);
}

/** Reads `n` big-endian 32-bit words at the stream's position without moving it. */
function peek(stream: Stream, n: number): number[] | undefined {
  const at = stream.getPosition();
  if (stream.getEndPosition() - at < 4 * n) return undefined; // mp4box reports the short box itself
  const words = Array.from({ length: n }, () => stream.readUint32());
  stream.seek(at);
  return words;
}

function admit(box: string, count: number, bound: number, why: string): void {
  const used = budget?.samples ?? 0;
  const max = budget?.maxSamples ?? MAX_SAMPLES;
  if (count > bound) throw corrupt(`${box} declares ${count} samples, more than ${why} can hold (${bound})`);
  if (count > max - used) {
    const message = `${box} declares ${count} samples after ${used} in this file; at most ${max} are indexed`;
    throw budget ? budget.over(message) : corrupt(message);
  }
  if (budget) budget.samples += count;
}

type Parser = (this: { start?: number; size: number }, stream: Stream) => void;

function guard(type: "stsz" | "trun", check: (box: { start?: number; size: number }, stream: Stream) => void): void {
  const proto = (BoxParser.box[type] as unknown as { prototype: { parse: Parser } }).prototype;
  const parse = proto.parse;
  proto.parse = function (stream) {
    check(this, stream);
    parse.call(this, stream);
  };
}

guard("stsz", (box, stream) => {
  const words = peek(stream, 3);
  if (!words || words[0]! >>> 24 !== 0) return; // mp4box parses version 0 only
  const [, sampleSize, count] = words as [number, number, number];
  const objectSize = budget?.objectSize ?? Number.MAX_SAFE_INTEGER;
  if (sampleSize === 0)
    admit("stsz", count, Math.floor((available(box, stream, stream.getPosition()) - 12) / 4), "its table");
  else
    admit(
      "stsz",
      count,
      Math.floor(objectSize / sampleSize),
      `the ${objectSize}-byte object at ${sampleSize} bytes each`,
    );
});

guard("trun", (box, stream) => {
  const words = peek(stream, 2);
  if (!words) return;
  const flags = words[0]! & 0xffffff;
  const count = words[1]!;
  let perSample = 0;
  for (const bit of [0x100, 0x200, 0x400, 0x800]) if (flags & bit) perSample += 4;
  const header = 8 + (flags & 0x1 ? 4 : 0) + (flags & 0x4 ? 4 : 0);
  if (perSample > 0) {
    admit(
      "trun",
      count,
      Math.floor((available(box, stream, stream.getPosition()) - header) / perSample),
      "its per-sample table",
    );
  } else {
    // Sizes and durations come from the defaults, so no table backs the count; every sample is
    // at least a byte of the object.
    const objectSize = budget?.objectSize ?? MAX_SAMPLES;
    admit("trun", count, objectSize, `the ${objectSize}-byte object`);
  }
});

/**
 * Runs `parse` (mp4box parsing the header boxes of one object of `objectSize` bytes) with every
 * stsz and trun it meets checked: more samples than the bytes behind them can hold throw
 * ERR_CORRUPT_MEDIA from inside the parse, more than `maxSamples` in all the error `over`
 * makes (the build's memory limit). mp4box parses synchronously, so one budget at a time is
 * the parse in progress.
 *
 * @example
 * const movie = withSampleBounds(reader.size, { maxSamples, over }, () => parseMovie(headerBytes));
 */
export function withSampleBounds<T>(
  objectSize: number,
  limit: { maxSamples: number; over: (message: string) => Error },
  parse: () => T,
): T {
  const outer = budget;
  budget = { objectSize, samples: 0, maxSamples: Math.min(limit.maxSamples, MAX_SAMPLES), over: limit.over };
  try {
    return parse();
  } finally {
    budget = outer;
  }
}
