/**
 * The Python rows' alternating TypeScript/Python pairs as figures: one pair's ratio, and the
 * median and range over the pairs (python-pairs.ts runs them).
 */
import { median } from "../stats.js";

export interface PythonPair {
  readonly ts_steady_clips_per_s: number;
  readonly py_steady_clips_per_s: number;
  /** Python's steady clips/s over the TypeScript run's right before it. */
  readonly ratio: number;
  /** The same over whole runs, start-up included. */
  readonly ratio_with_start: number;
  readonly ts_first_batch_s: number;
  readonly py_first_batch_s: number;
  readonly load_average: number;
}

export interface PythonPairs {
  readonly pairs: readonly PythonPair[];
  readonly ratio_median: number;
  readonly ratio_min: number;
  readonly ratio_max: number;
  readonly ratio_with_start_median: number;
  /** The Python runs' median time to first batch (the engine's start-up included). */
  readonly py_first_batch_median_s: number;
}

/** Median and range of the pairs' ratios. */
export function summarizePairs(pairs: readonly PythonPair[]): PythonPairs {
  const ratios = pairs.map((p) => p.ratio);
  return {
    pairs,
    ratio_median: median(ratios),
    ratio_min: Math.min(...ratios),
    ratio_max: Math.max(...ratios),
    ratio_with_start_median: median(pairs.map((p) => p.ratio_with_start)),
    py_first_batch_median_s: median(pairs.map((p) => p.py_first_batch_s)),
  };
}
