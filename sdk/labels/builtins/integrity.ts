import { z } from "zod";
import { defineLabeler, nonNegative, severity } from "./define.js";

/**
 * Decode integrity: decoder errors, frames flagged corrupt or concealed, and frames missing
 * against what the clip should hold (a frame the decoder could not produce never arrives).
 *
 * Flags: `decode-error`, `corrupt-frames`, `missing-frames`. Fails validation by default.
 */
export const IntegrityOptions = z.object({
  /** Decoder errors tolerated per clip. */
  maxErrors: nonNegative("maxErrors").default(0),
  /** Corrupt or concealed frames tolerated per clip. */
  maxCorruptFrames: nonNegative("maxCorruptFrames").default(0),
  /** Frames tolerated missing per clip. */
  maxMissingFrames: nonNegative("maxMissingFrames").default(0),
  severity: severity.default("fail"),
});

export const integrityLabeler = defineLabeler("integrity", 1, IntegrityOptions, (o, frames, info) => {
  let flagged = 0;
  for (const f of frames) if (f.corrupt) flagged++;
  const errors = info.decode?.errors ?? 0;
  const corrupt = Math.max(flagged, info.decode?.corruptFrames ?? 0);
  const missing = Math.max(0, info.frames - frames.length);
  const flags: string[] = [];
  if (errors > o.maxErrors) flags.push("decode-error");
  if (corrupt > o.maxCorruptFrames) flags.push("corrupt-frames");
  if (missing > o.maxMissingFrames) flags.push("missing-frames");
  return {
    flags,
    values: {
      decodeErrors: errors,
      corruptFrames: corrupt,
      missingFrames: missing,
      decodedFrames: frames.length,
      expectedFrames: info.frames,
    },
  };
});
