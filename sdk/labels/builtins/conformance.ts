import { z } from "zod";
import { defineLabeler, nonNegative, num, ratio, severity } from "./define.js";

const positive = (name: string) => num(name, "a positive number", (v) => v > 0);

/**
 * Conformance to what the dataset should hold: the source's resolution, frame rate and
 * duration (from the object's index, as ClipInfo.source carries them; the frames' own size
 * when the source is not given). Unset expectations are not checked.
 *
 * Flags: `resolution-mismatch`, `fps-mismatch`, `duration-out-of-range`. Fails validation by default.
 */
export const ConformanceOptions = z.object({
  width: positive("width").optional(),
  height: positive("height").optional(),
  fps: positive("fps").optional(),
  /** Relative tolerance on fps: 0.01 accepts 29.97 for 30. */
  fpsTolerance: ratio("fpsTolerance").default(0.01),
  /** Seconds. */
  minDuration: nonNegative("minDuration").optional(),
  maxDuration: nonNegative("maxDuration").optional(),
  severity: severity.default("fail"),
});

export const conformanceLabeler = defineLabeler("conformance", 1, ConformanceOptions, (o, frames, info) => {
  const width = info.source?.width ?? frames[0]?.width ?? 0;
  const height = info.source?.height ?? frames[0]?.height ?? 0;
  const fps = info.source?.fps;
  const duration = info.source?.duration;
  const flags: string[] = [];
  if ((o.width !== undefined && width !== o.width) || (o.height !== undefined && height !== o.height))
    flags.push("resolution-mismatch");
  if (o.fps !== undefined && (fps === undefined || Math.abs(fps - o.fps) > o.fpsTolerance * o.fps))
    flags.push("fps-mismatch");
  if (
    (o.minDuration !== undefined || o.maxDuration !== undefined) &&
    (duration === undefined || duration < (o.minDuration ?? 0) || duration > (o.maxDuration ?? Infinity))
  ) {
    flags.push("duration-out-of-range");
  }
  const values: Record<string, number> = { width, height };
  if (fps !== undefined) values.fps = fps;
  if (duration !== undefined) values.duration = duration;
  return { flags, values };
});
