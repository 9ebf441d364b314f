/**
 * "Scale on paper": from the measured per-clip costs of ec cold, what one GPU host needs to keep
 * its GPUs fed, and what N hosts pulling one R2 bucket cost in Class B operations per epoch.
 * The formulas are printed with the numbers so a lab can redo them with its own figures.
 */
import type { RowFigures } from "./figures.js";

export interface ScaleInputs {
  /** ec cold's figures: bytes and requests per clip, CPU per frame. */
  readonly cold: RowFigures;
  readonly framesPerClip: number;
  readonly rttMs: number;
  /** The stated consumption: GPUs per host and frames/s each. */
  readonly gpus: number;
  readonly gpuFps: number;
  /** Seconds of plan the cache prefetches ahead. */
  readonly horizonS: number;
  readonly hosts: number;
  /** Clips in one epoch across all hosts. */
  readonly epochClips: number;
}

export interface ScaleFigures {
  readonly frames_per_s: number;
  readonly clips_per_s: number;
  readonly wan_mbit_per_s: number;
  readonly cpu_cores_for_cpu_decode: number;
  readonly concurrent_ranges: number;
  readonly prefetch_cache_gb: number;
  readonly epoch_gb_fetched: number;
  readonly class_b_ops_per_epoch: number;
  readonly class_b_usd_per_epoch: number;
  readonly formulas: readonly string[];
}

/** R2 Class B (reads: GET, HEAD) in USD per million, as published for the Standard storage class. */
export const R2_CLASS_B_USD_PER_MILLION = 0.36;

/**
 * Derives host and bucket needs from measured per-clip costs.
 *
 * @example
 * scaleOnPaper({ cold, framesPerClip: 16, rttMs: 50, gpus: 8, gpuFps: 1000, horizonS: 10, hosts: 16, epochClips: 1e6 });
 */
export function scaleOnPaper(i: ScaleInputs): ScaleFigures {
  const R = i.gpus * i.gpuFps;
  const lambda = R / i.framesPerClip;
  const b = i.cold.bytes_per_clip;
  const q = i.cold.requests_per_clip ?? 1;
  // Little's law: ranges in flight = clip rate × time one clip's bytes take (an RTT, then the bytes at the per-stream rate).
  const perStreamBytesPerS = 12.5e6;
  const tClip = i.rttMs / 1000 + b / perStreamBytesPerS;
  const ops = i.epochClips * q;
  return {
    frames_per_s: R,
    clips_per_s: Number(lambda.toFixed(1)),
    wan_mbit_per_s: Number(((lambda * b * 8) / 1e6).toFixed(1)),
    cpu_cores_for_cpu_decode: Number((R * i.cold.cpu_s_per_frame).toFixed(1)),
    concurrent_ranges: Math.ceil(lambda * q * tClip),
    prefetch_cache_gb: Number(((lambda * i.horizonS * b) / 1e9).toFixed(2)),
    epoch_gb_fetched: Number(((i.epochClips * b) / 1e9).toFixed(1)),
    class_b_ops_per_epoch: Math.round(ops),
    class_b_usd_per_epoch: Number(((ops / 1e6) * R2_CLASS_B_USD_PER_MILLION).toFixed(2)),
    formulas: [
      `R = GPUs × fps = ${i.gpus} × ${i.gpuFps} = ${R} frames/s;  λ = R / T = ${lambda.toFixed(1)} clips/s (T = ${i.framesPerClip} frames/clip)`,
      `WAN = λ × b = ${lambda.toFixed(1)} × ${b} B = ${((lambda * b * 8) / 1e6).toFixed(1)} Mbit/s (b = bytes fetched per clip, measured)`,
      `CPU decode cores = R × c = ${R} × ${i.cold.cpu_s_per_frame} s = ${(R * i.cold.cpu_s_per_frame).toFixed(1)} (c = CPU s/frame, measured; NVDEC takes this off the CPU)`,
      `ranges in flight = λ × q × (RTT + b / s) = ${lambda.toFixed(1)} × ${q} × ${tClip.toFixed(3)} s = ${Math.ceil(lambda * q * tClip)} (q = requests/clip measured, s = 100 Mbit/s per stream assumed)`,
      `prefetch cache = λ × H × b = ${lambda.toFixed(1)} × ${i.horizonS} s × ${b} B = ${((lambda * i.horizonS * b) / 1e9).toFixed(2)} GB; to serve later epochs warm: ≥ the dataset's bytes`,
      `Class B per epoch = C × q = ${i.epochClips} × ${q} = ${Math.round(ops)} (ranks partition the epoch, so N = ${i.hosts} hosts do not multiply it; one host re-reading the whole epoch would: N × C × q)`,
      `cost = ops / 1e6 × $${R2_CLASS_B_USD_PER_MILLION} = $${((ops / 1e6) * R2_CLASS_B_USD_PER_MILLION).toFixed(2)} per epoch; plus per host per epoch: one manifest listing (Class A) and one index read per object (served from the edge's R2 copy: Class B)`,
    ],
  };
}
