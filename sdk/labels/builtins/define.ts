/** Shared plumbing of the built-in labelers: validated options and a stable fingerprint. */
import { z } from "zod";
import { describeReceived } from "../../../common/errors.js";
import { LabelOptionError } from "../errors.js";
import type { LabelClipInfo, LabelContext, Labeler, LabelerFactory, LabelResult } from "../labeler.js";
import type { LabelFrame } from "../frame.js";

export const severity = z.enum(["fail", "tag"]);

/** A number option: says what was expected and what came when it is wrong. */
export function num(name: string, what: string, check: (v: number) => boolean) {
  return z.custom<number>((v) => typeof v === "number" && Number.isFinite(v) && check(v), {
    error: (iss) => `Expected ${what} for ${name} but received ${describeReceived(iss.input)}`,
  });
}
export const ratio = (name: string) => num(name, "a number from 0 to 1", (v) => v >= 0 && v <= 1);
export const nonNegative = (name: string) => num(name, "a non-negative number", (v) => v >= 0);
export const luma = (name: string) => num(name, "a luma level from 0 to 255", (v) => v >= 0 && v <= 255);

/**
 * Builds a labeler factory from an options schema (every field with a default) and a pure
 * function of the parsed options, the frames and the clip.
 */
export function defineLabeler<S extends z.ZodObject>(
  name: string,
  version: number,
  schema: S,
  label: (o: z.output<S>, frames: readonly LabelFrame[], info: LabelClipInfo, ctx: LabelContext) => LabelResult,
): LabelerFactory {
  const strict = schema.strict();
  return (options = {}) => {
    if (options === null || typeof options !== "object" || Array.isArray(options)) {
      throw new LabelOptionError(
        `Expected an options object for labeler ${JSON.stringify(name)} but received ${describeReceived(options)}`,
      );
    }
    const parsed = strict.safeParse(options);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const message =
        issue.code === "unrecognized_keys"
          ? `Expected only the options ${Object.keys(schema.shape).join(", ")} for labeler ${JSON.stringify(name)} but received ${issue.keys.map((k) => JSON.stringify(k)).join(", ")}`
          : `labeler ${JSON.stringify(name)}: ${issue.message}`;
      throw new LabelOptionError(message);
    }
    const o = parsed.data as z.output<S> & { severity: "fail" | "tag" };
    const labeler: Labeler = {
      name,
      severity: o.severity,
      fingerprint: `${name}@${version}:${stableJson(o)}`,
      label: (frames, info, ctx) => label(o, frames, info, ctx),
    };
    return labeler;
  };
}

/** Ratios rounded for reports and cache files: 4 decimals are far below any threshold's meaning. */
export function round(v: number, digits = 4): number {
  if (!Number.isFinite(v)) return 0;
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

/** JSON with object keys sorted at every level, so equal settings give equal fingerprints. */
export function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}
