/**
 * The labeler contract: a plain function or an object with `label()` over a clip's decoded
 * frames and what is known about the clip, returning a result record.
 */
import type { ClipAnalysis } from "./analysis.js";
import type { LabelFrame } from "./frame.js";

/** A JSON-safe value a labeler reports. */
export type LabelValue = number | boolean | string | readonly number[];

/** What one labeler says about one clip. */
export interface LabelResult {
  /** Short kebab-case findings, e.g. "black", "scene-cut"; empty when nothing was found. */
  readonly flags?: readonly string[];
  /** Measurements behind the flags (ratios, scores, positions). */
  readonly values?: Readonly<Record<string, LabelValue>>;
  /** Overrides the labeler's severity: false fails validation whatever the flags. */
  readonly valid?: boolean;
}

/** What the decoder reported for the clip, when it reports anything. */
export interface DecodeReport {
  /** Decode calls that returned an error. */
  readonly errors?: number;
  /** Frames the decoder flagged corrupt or concealed (also counted from `VideoFrame.corrupt`). */
  readonly corruptFrames?: number;
}

/** The properties of a clip the labelers read; the SDK's ClipInfo satisfies it. */
export interface LabelClipInfo {
  readonly key: string;
  /** The object's etag: part of the cache key, so a changed object is labeled again. */
  readonly etag?: string;
  /** First frame of the clip within its object. */
  readonly start: number;
  /** Frames the clip should hold. */
  readonly frames: number;
  readonly stride: number;
  /** The source video as its index describes it (before any resize). */
  readonly source?: {
    readonly width?: number;
    readonly height?: number;
    readonly fps?: number;
    readonly duration?: number;
  };
  readonly decode?: DecodeReport;
}

/** Handed to every labeler next to the frames: the shared one-pass analysis, computed on first use. */
export interface LabelContext {
  analysis(): ClipAnalysis;
}

export type LabelFunction = (
  frames: readonly LabelFrame[],
  info: LabelClipInfo,
  context: LabelContext,
) => LabelResult | Promise<LabelResult>;

/**
 * A named labeler. `severity: "fail"` makes any flag fail the clip's validation (the default
 * filter then drops it); `"tag"` only records the flags.
 */
export interface Labeler {
  readonly name: string;
  readonly severity: "fail" | "tag";
  /** Identifies the labeler's code and settings: cached results are reused only when it matches. */
  readonly fingerprint: string;
  label(frames: readonly LabelFrame[], info: LabelClipInfo, context: LabelContext): LabelResult | Promise<LabelResult>;
}

/** Makes a labeler from its options (thresholds); validates them and throws LabelOptionError. */
export type LabelerFactory = (options?: Readonly<Record<string, unknown>>) => Labeler;
