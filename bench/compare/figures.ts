/** Per-row figures from what a row measured, the headline ratios, and the targets they meet or miss. */
import type { RowName } from "./args.js";
import type { PythonPairs } from "./pair-summary.js";
import type { RowOutcome } from "./row.js";

export interface RowFigures {
  readonly clips: number;
  readonly frames: number;
  readonly seconds: number;
  readonly clips_per_s: number;
  readonly frames_per_s: number;
  /**
   * clips/s after the first batch: (clips − first batch) / (seconds − time to first batch). Start-up
   * (manifest, indexes, connections, a download) is paid once per run; this is the rate a long epoch sees.
   */
  readonly steady_clips_per_s: number;
  /** Bytes over the WAN for remote rows, bytes read from disk for local. */
  readonly bytes_fetched: number;
  readonly mb_per_s_fetched: number;
  readonly bytes_per_clip: number;
  /** Range requests over the WAN per clip (remote rows): what the bucket bills as Class B. */
  readonly requests_per_clip: number | null;
  /** Locate requests the origin-cache answered per clip (the local data plane's), where it counts them. */
  readonly locates_per_clip: number | null;
  readonly cache_syncs_per_clip: number | null;
  readonly time_to_first_batch_s: number;
  readonly stall_ratio: number;
  readonly peak_rss_mb: number;
  readonly cpu_s_per_frame: number;
  /** The same in ms: the client side's CPU (loader, decoder threads, origin-cache) per delivered frame. */
  readonly client_cpu_ms_per_frame: number;
  /** The origin-cache process's part of client_cpu_ms_per_frame (ec rows; null for rows without one). */
  readonly cache_cpu_ms_per_frame: number | null;
  /** Minor page faults per frame of the row's process (loader and decoder threads), and of the origin-cache. */
  readonly row_minor_faults_per_frame: number | null;
  readonly cache_minor_faults_per_frame: number | null;
  /** The Python client's own CPU per frame in ms (ec from PyTorch only): what the bridge adds over the engine. */
  readonly bridge_ms_per_frame: number | null;
  /** CPU seconds the remote side (edge in workerd, WAN emulator) spent meanwhile on these same cores. */
  readonly remote_cpu_s: number;
  /** clips/s over the local reference's (the mean of the local runs right before and after this row). */
  readonly vs_local: number | null;
  /** steady clips/s over the local reference's steady clips/s. */
  readonly vs_local_steady: number | null;
  readonly local_reference_clips_per_s: number | null;
}

export type RowResult = { readonly label: string } & (
  | { readonly status: "ran"; readonly figures: RowFigures }
  | { readonly status: "skipped"; readonly reason: string }
);

const round = (x: number, digits = 4): number => Number(x.toPrecision(digits));

/** The local-files rate a row is compared with: local runs taken right before and after it. */
export interface LocalReference {
  readonly clipsPerS: number;
  readonly steadyClipsPerS: number;
}

/** Figures of one row; `local` makes its vs_local ratios. */
export function figuresOf(
  o: Extract<RowOutcome, { kind: "ran" }>,
  local: LocalReference | undefined,
  batch = 1,
): RowFigures {
  const r = o.report;
  const steadyS = r.seconds - r.firstBatchSeconds;
  const steadyClips = r.clips - Math.min(batch, r.clips);
  const bytes = o.wanBytes ?? r.bytesFetched ?? 0;
  const cps = r.seconds > 0 ? r.clips / r.seconds : 0;
  return {
    clips: r.clips,
    frames: r.frames,
    seconds: round(r.seconds),
    clips_per_s: round(cps),
    frames_per_s: round(r.seconds > 0 ? r.frames / r.seconds : 0),
    steady_clips_per_s: round(steadyS > 0 ? steadyClips / steadyS : 0),
    bytes_fetched: bytes,
    mb_per_s_fetched: round(r.seconds > 0 ? bytes / r.seconds / 1e6 : 0),
    bytes_per_clip: Math.round(r.clips > 0 ? bytes / r.clips : 0),
    requests_per_clip: o.wanRequests === undefined || r.clips === 0 ? null : round(o.wanRequests / r.clips),
    locates_per_clip: o.cacheLocates === undefined || r.clips === 0 ? null : round(o.cacheLocates / r.clips),
    cache_syncs_per_clip: o.cacheSyncs === undefined || r.clips === 0 ? null : round(o.cacheSyncs / r.clips),
    time_to_first_batch_s: round(r.firstBatchSeconds),
    stall_ratio: round(r.stallRatio, 3),
    peak_rss_mb: round(o.peakMemoryBytes / 2 ** 20),
    cpu_s_per_frame: round(r.frames > 0 ? o.cpuSeconds / r.frames : 0),
    client_cpu_ms_per_frame: round(r.frames > 0 ? (o.cpuSeconds / r.frames) * 1000 : 0),
    cache_cpu_ms_per_frame:
      o.alsoCpuSeconds === undefined || r.frames === 0 ? null : round((o.alsoCpuSeconds / r.frames) * 1000),
    row_minor_faults_per_frame: r.minorFaults === undefined || r.frames === 0 ? null : round(r.minorFaults / r.frames),
    cache_minor_faults_per_frame:
      o.alsoMinorFaults === undefined || r.frames === 0 ? null : round(o.alsoMinorFaults / r.frames),
    bridge_ms_per_frame:
      r.bridgeCpuSeconds === undefined || r.frames === 0 ? null : round((r.bridgeCpuSeconds / r.frames) * 1000),
    remote_cpu_s: round(o.remoteCpuSeconds, 3),
    vs_local: local?.clipsPerS ? round(cps / local.clipsPerS) : null,
    vs_local_steady:
      local?.steadyClipsPerS && steadyS > 0 ? round(steadyClips / steadyS / local.steadyClipsPerS) : null,
    local_reference_clips_per_s: local ? round(local.clipsPerS) : null,
  };
}

export interface Ratios {
  readonly ec_cold_vs_local: number | null;
  readonly ec_warm_vs_local: number | null;
  readonly ec_vs_naive: number | null;
  readonly ec_vs_torch: number | null;
  /** Client-side CPU per frame of ec cold and warm over the local row's. */
  readonly client_cpu_cold_vs_local: number | null;
  readonly client_cpu_warm_vs_local: number | null;
  /**
   * ec from PyTorch over the TypeScript consumer on the same warm cache (with `--pairs`, the median
   * of alternating pairs' steady clips/s), and over PyTorch + PyAV.
   */
  readonly ec_python_vs_ts: number | null;
  /** The pairs' median over whole runs, the Python engine's start-up included (null without pairs). */
  readonly ec_python_vs_ts_with_start: number | null;
  readonly ec_python_vs_torch: number | null;
  /** The same as ec_python_vs_ts with the Python client and engine installed from the wheel. */
  readonly ec_python_wheel_vs_ts: number | null;
  /** The wheel row's time to first batch over the checkout row's (medians over their pairs; no target). */
  readonly python_first_batch_wheel_vs_checkout: number | null;
  readonly bytes_per_clip_vs_gop: number | null;
  /** The same two ratios after the first batch (no target; start-up amortized as in a long epoch). */
  readonly ec_cold_vs_local_steady: number | null;
  readonly ec_warm_vs_local_steady: number | null;
  /** ec cold through the WAN over torchcodec reading the same signed URLs through fsspec's HTTP file (random order). */
  readonly ec_cold_vs_torchcodec_remote: number | null;
  /** ec on local files over torchcodec on them, clips in the same random order. */
  readonly ec_local_vs_torchcodec_random: number | null;
  /** ec local's client CPU per delivered frame over torchcodec's in file order (its best case). */
  readonly ec_cpu_per_frame_vs_torchcodec_sequential: number | null;
  /** ec on local files over SPDL on them, random order (no target). */
  readonly ec_local_vs_spdl_random: number | null;
}

export interface Target {
  readonly ratio: keyof Ratios;
  readonly goal: string;
  readonly min?: number;
  readonly max?: number;
  readonly value: number | null;
  /** null when the ratio could not be measured (a row skipped). */
  readonly met: boolean | null;
  /** value over the bound: how far above (min) or below (max) the target it is; < 1 misses. */
  readonly margin: number | null;
}

/** The rows that alternate runs with the TypeScript consumer (python-pairs.ts). */
export type PythonRowName = Extract<RowName, "ec_python" | "ec_python_wheel">;

/**
 * The headline ratios. `gopBytesPerClip` is the bytes from each clip's keyframe to its last
 * sample, averaged (ec's bytes_needed over the local row's clips); `pythonPairs`, the Python
 * rows' alternating pairs, where they ran them.
 */
export function ratiosOf(
  rows: Partial<Record<RowName, RowResult>>,
  gopBytesPerClip: number | undefined,
  pythonPairs: Partial<Record<PythonRowName, PythonPairs>> = {},
): Ratios {
  // Each row is normalized by local runs taken next to it, so load that drifts during the run cancels.
  const vs = (n: RowName, key: "vs_local" | "vs_local_steady"): number | undefined => {
    const r = rows[n];
    return r?.status === "ran" && r.figures[key] !== null && r.figures[key]! > 0 ? r.figures[key]! : undefined;
  };
  const div = (a: number | undefined, b: number | undefined): number | null =>
    a !== undefined && b !== undefined ? round(a / b) : null;
  const cold = rows.ec_cold;
  const cpu = (n: RowName): number | undefined => {
    const r = rows[n];
    return r?.status === "ran" && r.figures.client_cpu_ms_per_frame > 0 ? r.figures.client_cpu_ms_per_frame : undefined;
  };
  const firstBatch = (n: PythonRowName): number | undefined => {
    const r = rows[n];
    return (
      pythonPairs[n]?.py_first_batch_median_s ?? (r?.status === "ran" ? r.figures.time_to_first_batch_s : undefined)
    );
  };
  const vsTs = (n: PythonRowName): number | null =>
    pythonPairs[n]?.ratio_median ?? div(vs(n, "vs_local"), vs("ec_warm", "vs_local"));
  return {
    ec_cold_vs_local: div(vs("ec_cold", "vs_local"), 1),
    ec_warm_vs_local: div(vs("ec_warm", "vs_local"), 1),
    ec_vs_naive: div(vs("ec_cold", "vs_local"), vs("naive", "vs_local")),
    ec_vs_torch: div(vs("ec_cold", "vs_local"), vs("torch", "vs_local")),
    client_cpu_cold_vs_local: div(cpu("ec_cold"), cpu("local")),
    client_cpu_warm_vs_local: div(cpu("ec_warm"), cpu("local")),
    ec_python_vs_ts: vsTs("ec_python"),
    ec_python_vs_ts_with_start: pythonPairs.ec_python?.ratio_with_start_median ?? null,
    ec_python_vs_torch: div(vs("ec_python", "vs_local"), vs("torch", "vs_local")),
    ec_python_wheel_vs_ts: vsTs("ec_python_wheel"),
    python_first_batch_wheel_vs_checkout: div(firstBatch("ec_python_wheel"), firstBatch("ec_python") || undefined),
    bytes_per_clip_vs_gop: div(
      cold?.status === "ran" ? cold.figures.bytes_per_clip : undefined,
      gopBytesPerClip || undefined,
    ),
    ec_cold_vs_local_steady: div(vs("ec_cold", "vs_local_steady"), 1),
    ec_warm_vs_local_steady: div(vs("ec_warm", "vs_local_steady"), 1),
    ec_cold_vs_torchcodec_remote: div(vs("ec_cold", "vs_local"), vs("torchcodec_remote", "vs_local")),
    ec_local_vs_torchcodec_random: div(1, vs("torchcodec_local", "vs_local")),
    ec_cpu_per_frame_vs_torchcodec_sequential: div(cpu("local"), cpu("torchcodec_local_sequential")),
    ec_local_vs_spdl_random: div(1, vs("spdl", "vs_local")),
  };
}

/**
 * Bytes each row fetched per delivered clip (over the WAN for remote rows, from disk for local
 * ones), for every row that ran: what `--json`'s `bytes_per_clip` holds.
 */
export function bytesPerClipOf(rows: Partial<Record<RowName, RowResult>>): Partial<Record<RowName, number>> {
  const out: Partial<Record<RowName, number>> = {};
  for (const [name, r] of Object.entries(rows) as [RowName, RowResult | undefined][])
    if (r?.status === "ran") out[name] = r.figures.bytes_per_clip;
  return out;
}

const GOALS: readonly (Omit<Target, "value" | "met" | "margin" | "ratio"> & { ratio: keyof Ratios })[] = [
  { ratio: "ec_cold_vs_local", goal: "ec cold ≥ 0.95 × local", min: 0.95 },
  { ratio: "ec_warm_vs_local", goal: "ec warm ≥ 1.0 × local (within noise)", min: 1.0 },
  { ratio: "ec_vs_naive", goal: "ec ≥ 5 × naive streaming (random clips)", min: 5 },
  { ratio: "ec_vs_torch", goal: "ec ≥ 2 × PyTorch + PyAV", min: 2 },
  { ratio: "client_cpu_cold_vs_local", goal: "client CPU per frame cold ≤ 1.15 × local", max: 1.15 },
  { ratio: "client_cpu_warm_vs_local", goal: "client CPU per frame warm ≤ 1.05 × local", max: 1.05 },
  { ratio: "ec_python_vs_ts", goal: "ec from PyTorch ≥ 0.95 × the TypeScript consumer", min: 0.95 },
  { ratio: "ec_python_wheel_vs_ts", goal: "ec from the installed wheel ≥ 0.95 × TypeScript", min: 0.95 },
  { ratio: "ec_python_vs_torch", goal: "ec from PyTorch ≥ 2 × PyTorch + PyAV", min: 2 },
  { ratio: "bytes_per_clip_vs_gop", goal: "bytes per clip ≤ 1.2 × GOP bytes", max: 1.2 },
  { ratio: "ec_cold_vs_torchcodec_remote", goal: "ec cold ≥ 2 × torchcodec remote (random)", min: 2 },
  { ratio: "ec_local_vs_torchcodec_random", goal: "ec local ≥ 1.0 × torchcodec (random)", min: 1.0 },
  {
    ratio: "ec_cpu_per_frame_vs_torchcodec_sequential",
    goal: "ec CPU per frame ≤ 1.05 × torchcodec's file order",
    max: 1.05,
  },
];

/** Each target with its measured value, whether it is met and by what margin. */
export function targetsOf(ratios: Ratios): Target[] {
  return GOALS.map((g) => {
    const value = ratios[g.ratio];
    if (value === null) return { ...g, value, met: null, margin: null };
    const margin = g.min !== undefined ? value / g.min : g.max! / value;
    return { ...g, value, met: margin >= 1, margin: round(margin, 3) };
  });
}
