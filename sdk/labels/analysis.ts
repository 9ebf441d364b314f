/**
 * One pass over each frame's luma grid that every built-in labeler reads from: histogram,
 * row and column means, and the difference to the previous frame. It holds no thresholds, so
 * labelers with different settings share it and only the cheap per-clip reductions differ.
 */
import { gridStep, lumaGrid, type VideoFrame } from "./frame.js";

export interface FrameStats {
  /** 256-bin luma histogram of the grid. */
  readonly histogram: Uint32Array;
  /** Samples in the grid (the histogram's total). */
  readonly samples: number;
  readonly mean: number;
  /** Standard deviation of luma: near 0 for a blank (uniform) frame. */
  readonly std: number;
  /** Mean luma of each grid row (top to bottom) and column (left to right). */
  readonly rowMeans: Float32Array;
  readonly colMeans: Float32Array;
  /** Mean absolute luma difference to the previous frame, 0–255; NaN for the first frame. */
  readonly diff: number;
  /** Half the L1 distance between this and the previous frame's 32-bin histograms, 0–1; NaN for the first. */
  readonly histDistance: number;
  /** The decoder flagged this frame. */
  readonly corrupt: boolean;
}

export interface ClipAnalysis {
  /** Size of the frames as handed over (after any resize in the pipeline). */
  readonly width: number;
  readonly height: number;
  /** Pixels between grid samples in each direction. */
  readonly step: number;
  readonly frames: readonly FrameStats[];
}

export interface AnalysisOptions {
  /**
   * About how many luma samples to read per frame (default 12288, e.g. 143×80 of a 720p
   * frame); 0 reads every pixel. Means, ratios and differences over the grid estimate the
   * full-resolution ones; bar positions are exact to one grid step.
   */
  readonly gridSamples?: number;
}

const COARSE_SHIFT = 3; // 256 → 32 bins: robust to noise, still separates distinct shots

/**
 * Reads every frame of a clip once.
 *
 * @example
 * const a = analyzeClip(frames, { gridSamples: 12_288 });
 * const meanMotion = a.frames.slice(1).reduce((s, f) => s + f.diff, 0) / (a.frames.length - 1);
 */
export function analyzeClip(frames: readonly VideoFrame[], options: AnalysisOptions = {}): ClipAnalysis {
  const first = frames[0];
  if (!first) return { width: 0, height: 0, step: 1, frames: [] };
  const step = analysisStep(first, options);
  let prev: Uint8Array | undefined;
  let cur: Uint8Array | undefined;
  let prevCoarse: Float64Array | undefined;
  const out: FrameStats[] = [];
  for (const frame of frames) {
    const grid = lumaGrid(frame, step, cur);
    const d = grid.data;
    const gw = grid.width;
    const gh = grid.height;
    const histogram = new Uint32Array(256);
    const rowSums = new Uint32Array(gh);
    const colSums = new Uint32Array(gw); // integer sums: exact, and cheaper than doubles per sample
    const comparable = prev !== undefined && prev.length === d.length;
    let absDiff = 0;
    for (let y = 0, i = 0; y < gh; y++) {
      let rowSum = 0;
      if (comparable) {
        const p = prev!;
        for (let x = 0; x < gw; x++, i++) {
          const v = d[i]!;
          histogram[v]!++;
          rowSum += v;
          colSums[x]! += v;
          const delta = v - p[i]!;
          absDiff += delta < 0 ? -delta : delta;
        }
      } else {
        for (let x = 0; x < gw; x++, i++) {
          const v = d[i]!;
          histogram[v]!++;
          rowSum += v;
          colSums[x]! += v;
        }
      }
      rowSums[y] = rowSum;
    }
    const stats = statsFromSums(
      { histogram, rowSums, colSums, absDiff: comparable ? absDiff : undefined },
      prevCoarse,
      frame.corrupt === true,
    );
    out.push(stats.frame);
    // Swap buffers so the previous grid survives while the next one is read.
    const spare = prev;
    prev = d;
    cur = spare;
    prevCoarse = stats.coarse;
  }
  return { width: first.width, height: first.height, step, frames: out };
}

/** The integer sums of one frame's grid: what the CPU loop above and the GPU kernel both produce. */
export interface GridSums {
  readonly histogram: Uint32Array;
  readonly rowSums: Uint32Array;
  readonly colSums: Uint32Array;
  /** Sum of absolute differences to the previous grid; undefined when there is none to compare. */
  readonly absDiff: number | undefined;
}

/** FrameStats from a grid's sums: one definition for every implementation, so they agree exactly. */
function statsFromSums(
  sums: GridSums,
  prevCoarse: Float64Array | undefined,
  corrupt: boolean,
): { frame: FrameStats; coarse: Float64Array } {
  const { histogram, rowSums: rs, colSums: cs } = sums;
  const gw = cs.length;
  const gh = rs.length;
  const samples = gw * gh;
  const rowMeans = new Float32Array(gh);
  for (let y = 0; y < gh; y++) rowMeans[y] = rs[y]! / gw;
  const colMeans = new Float32Array(gw);
  for (let x = 0; x < gw; x++) colMeans[x] = cs[x]! / gh;
  let sum = 0;
  let sumSq = 0;
  const coarse = new Float64Array(256 >> COARSE_SHIFT);
  for (let v = 0; v < 256; v++) {
    const n = histogram[v]!;
    sum += n * v;
    sumSq += n * v * v;
    coarse[v >> COARSE_SHIFT]! += n / samples;
  }
  const mean = sum / samples;
  let histDistance = Number.NaN;
  if (prevCoarse) {
    histDistance = 0;
    for (let b = 0; b < coarse.length; b++) histDistance += Math.abs(coarse[b]! - prevCoarse[b]!);
    histDistance /= 2;
  }
  const frame: FrameStats = {
    histogram,
    samples,
    mean,
    std: Math.sqrt(Math.max(0, sumSq / samples - mean * mean)),
    rowMeans,
    colMeans,
    diff: sums.absDiff === undefined ? Number.NaN : sums.absDiff / samples,
    histDistance,
    corrupt,
  };
  return { frame, coarse };
}

/** A frame whose luma sums are computed elsewhere (on its GPU): its size and the decoder's flag. */
export interface SizedFrame {
  readonly width: number;
  readonly height: number;
  readonly corrupt?: boolean;
}

/**
 * The same analysis as analyzeClip from per-frame grid sums computed elsewhere — on the GPU
 * for frames that live there (see analyzeDeviceClip) — given the grid step they were read with.
 *
 * @example
 * const step = analysisStep(frames[0]!, {});
 * const a = analysisFromSums(frames, step, await lumaStatsOnDevice(frames, step));
 */
export function analysisFromSums(frames: readonly SizedFrame[], step: number, sums: readonly GridSums[]): ClipAnalysis {
  const first = frames[0];
  if (!first) return { width: 0, height: 0, step: 1, frames: [] };
  let prevCoarse: Float64Array | undefined;
  const out = frames.map((f, i) => {
    const stats = statsFromSums(sums[i]!, prevCoarse, f.corrupt === true);
    prevCoarse = stats.coarse;
    return stats.frame;
  });
  return { width: first.width, height: first.height, step, frames: out };
}

/** The grid step analyzeClip uses for a clip whose first frame is `first`. */
export function analysisStep(first: { width: number; height: number }, options: AnalysisOptions = {}): number {
  const target = options.gridSamples ?? 12_288;
  return target > 0 ? gridStep(first.width, first.height, target) : 1;
}

/**
 * Fraction of a frame's samples with luma at most `max`.
 *
 * @example
 * const dark = fractionAtMost(analyzeClip(frames).frames[0]!, 32); // 1 for a black frame
 */
export function fractionAtMost(stats: FrameStats, max: number): number {
  let n = 0;
  const top = Math.min(255, Math.floor(max));
  for (let v = 0; v <= top; v++) n += stats.histogram[v]!;
  return n / stats.samples;
}
