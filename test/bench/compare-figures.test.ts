import { describe, expect, it } from "vitest";
import { parseCompareArgs } from "../../bench/compare/args.js";
import { renderChart } from "../../bench/compare/chart.js";
import { figuresOf, ratiosOf, targetsOf, type RowResult } from "../../bench/compare/figures.js";
import { summarizePairs } from "../../bench/compare/pair-summary.js";
import { runPythonPairs } from "../../bench/compare/python-pairs.js";
import type { RowContext } from "../../bench/compare/row.js";
import { scaleOnPaper } from "../../bench/compare/scale.js";
import type { Measured } from "../../bench/compare/run-child.js";

function measured(clips: number, seconds: number, extra: Partial<Measured> = {}): { kind: "ran" } & Measured {
  return {
    kind: "ran",
    report: {
      clips,
      frames: clips * 16,
      seconds,
      firstBatchSeconds: 1,
      stallRatio: 0.5,
      cpuSeconds: clips * 0.16,
      bytesFetched: clips * 1000,
    },
    peakMemoryBytes: 100 * 2 ** 20,
    cpuSeconds: clips * 0.16,
    wanBytes: undefined,
    wanRequests: undefined,
    remoteCpuSeconds: 0,
    alsoCpuSeconds: undefined,
    alsoMinorFaults: undefined,
    ...extra,
  };
}

describe("compare figures", () => {
  it("derives per-row rates, prefers WAN bytes over the row's own count, and ratios to local", () => {
    const local = figuresOf(measured(40, 10), undefined);
    const ref = { clipsPerS: local.clips_per_s, steadyClipsPerS: local.steady_clips_per_s };
    expect(local).toMatchObject({
      clips_per_s: 4,
      frames_per_s: 64,
      steady_clips_per_s: 4.333,
      bytes_per_clip: 1000,
      requests_per_clip: null,
      vs_local: null,
      peak_rss_mb: 100,
      cpu_s_per_frame: 0.01,
    });
    const cold = figuresOf(
      { ...measured(40, 20, { wanBytes: 80_000, wanRequests: 60 }), cacheLocates: 10, cacheSyncs: 4 },
      ref,
    );
    expect(local.locates_per_clip).toBeNull();
    expect(local.cache_syncs_per_clip).toBeNull();
    expect(cold).toMatchObject({
      clips_per_s: 2,
      bytes_per_clip: 2000,
      requests_per_clip: 1.5,
      locates_per_clip: 0.25,
      cache_syncs_per_clip: 0.1,
      vs_local: 0.5,
      mb_per_s_fetched: 0.004,
      bridge_ms_per_frame: null,
    });
    const py = measured(40, 20);
    const python = figuresOf({ ...py, report: { ...py.report, bridgeCpuSeconds: 0.032 } }, ref);
    expect(python.bridge_ms_per_frame).toBe(0.05); // 32 ms over 640 frames
    expect(local).toMatchObject({ cache_cpu_ms_per_frame: null, cache_minor_faults_per_frame: null });
    const relay = measured(40, 20, { alsoCpuSeconds: 1.28, alsoMinorFaults: 3200 });
    const split = figuresOf({ ...relay, report: { ...relay.report, minorFaults: 6400 } }, ref);
    // 640 frames: 2 ms of the cache's CPU, 10 and 5 faults per frame in the row and the cache.
    expect(split).toMatchObject({
      cache_cpu_ms_per_frame: 2,
      row_minor_faults_per_frame: 10,
      cache_minor_faults_per_frame: 5,
    });
  });

  it("computes the headline ratios from each row's own local reference and marks targets with their margin", () => {
    const ref = { clipsPerS: 4, steadyClipsPerS: 39 / 9 };
    const row = (label: string, cps: number, local = ref): RowResult => ({
      label,
      status: "ran",
      figures: { ...figuresOf(measured(cps * 10, 10), local), bytes_per_clip: 1500 },
    });
    const rows = {
      local: row("local", 4),
      ec_cold: row("cold", 3.9),
      ec_warm: row("warm", 4.2),
      ec_python: row("python", 4.2 * 0.96),
      naive: row("naive", 0.25, { clipsPerS: 2, steadyClipsPerS: 2 }),
      torch: { label: "torch", status: "skipped", reason: "no torch" },
    } as const;
    const ratios = ratiosOf(rows, 1000);
    expect(ratios).toMatchObject({
      ec_cold_vs_local: 0.975,
      ec_warm_vs_local: 1.05,
      ec_vs_naive: 7.8,
      ec_vs_torch: null,
      bytes_per_clip_vs_gop: 1.5,
    });
    expect(ratios).toMatchObject({ ec_python_vs_ts: 0.96, ec_python_vs_torch: null });
    // After the first batch (1 s, one clip): (39 − 1) / 9 over (40 − 1) / 9.
    expect(ratios.ec_cold_vs_local_steady).toBeCloseTo(38 / 39, 3);
    const byRatio = Object.fromEntries(targetsOf(ratios).map((t) => [t.ratio, t]));
    expect(byRatio.ec_cold_vs_local).toMatchObject({ met: true, margin: 1.03 });
    expect(byRatio.ec_vs_naive).toMatchObject({ met: true, margin: 1.56 });
    expect(byRatio.ec_vs_torch).toMatchObject({ met: null, margin: null });
    expect(byRatio.bytes_per_clip_vs_gop).toMatchObject({ met: false, margin: 0.8 });
    expect(byRatio.ec_python_vs_ts).toMatchObject({ met: true, margin: 1.01 });
  });

  it("charts only the rows that ran, with their ratio to local", () => {
    const rows = {
      local: {
        label: "local <files>",
        status: "ran",
        figures: figuresOf(measured(40, 10), { clipsPerS: 4, steadyClipsPerS: 4 }),
      },
      torch: { label: "torch", status: "skipped", reason: "x" },
    } as const;
    const svg = renderChart(rows, "sub");
    expect(svg).toContain("local &lt;files&gt;");
    expect(svg).toContain("(×1.00 local)");
    expect(svg).not.toContain(">torch<");
  });

  it("scales per-clip costs to a host's needs with the formulas shown", () => {
    const cold = {
      ...figuresOf(measured(40, 10), undefined),
      bytes_per_clip: 250_000,
      requests_per_clip: 2,
      cpu_s_per_frame: 0.004,
    };
    const s = scaleOnPaper({
      cold,
      framesPerClip: 16,
      rttMs: 50,
      gpus: 8,
      gpuFps: 1000,
      horizonS: 10,
      hosts: 16,
      epochClips: 1_000_000,
    });
    expect(s).toMatchObject({
      frames_per_s: 8000,
      clips_per_s: 500,
      wan_mbit_per_s: 1000,
      cpu_cores_for_cpu_decode: 32,
      class_b_ops_per_epoch: 2_000_000,
      class_b_usd_per_epoch: 0.72,
    });
    expect(s.formulas.join("\n")).toContain("Class B per epoch = C × q = 1000000 × 2");
  });
});

describe("compare Python pairs", () => {
  it("alternates TypeScript and Python runs and sets each Python run against the one right before it", async () => {
    const order: string[] = [];
    // Load drifts between pairs (the TypeScript rate halves); each pair's ratio stays 0.9, 1.0, 0.8.
    const ts = [20, 10, 5];
    const py = [18, 10, 4];
    let i = 0;
    let j = 0;
    const ctx = { config: parseCompareArgs(["--batch", "1"]) } as RowContext;
    const { outcome, pairs } = await runPythonPairs(
      ctx,
      3,
      async () => (order.push("ts"), measured(ts[i]! * 9 + 1, 10, {})),
      async () => (order.push("py"), measured(py[i++]! * 9 + 1, 10, { cpuSeconds: ++j })),
      () => 2,
      () => {},
    );
    expect(order).toEqual(["ts", "py", "ts", "py", "ts", "py"]);
    expect(pairs?.pairs.map((p) => p.ratio)).toEqual([0.9, 1, 0.8]);
    expect(pairs).toMatchObject({ ratio_median: 0.9, ratio_min: 0.8, ratio_max: 1 });
    expect(pairs?.pairs[0]).toMatchObject({
      ts_steady_clips_per_s: 20,
      py_steady_clips_per_s: 18,
      ts_first_batch_s: 1,
    });
    // The row's figures are the median pair's Python run.
    expect(outcome.kind === "ran" && outcome.cpuSeconds).toBe(1);
    const ratios = ratiosOf({}, undefined, { ec_python: pairs! });
    expect(ratios.ec_python_vs_ts).toBe(0.9);
    // Whole runs: (18·9 + 1) / (20·9 + 1) clips in the same 10 s.
    expect(ratios.ec_python_vs_ts_with_start).toBeCloseTo(163 / 181, 3);
    expect(ratios).toMatchObject({ ec_python_wheel_vs_ts: null, python_first_batch_wheel_vs_checkout: null });
  });

  it("sets the installed wheel's pairs and first batch against the checkout's", () => {
    const pair = (ratio: number, firstBatch: number) => ({
      ts_steady_clips_per_s: 10,
      py_steady_clips_per_s: 10 * ratio,
      ratio,
      ratio_with_start: ratio,
      ts_first_batch_s: 1,
      py_first_batch_s: firstBatch,
      load_average: 1,
    });
    const checkout = summarizePairs([pair(0.96, 1.5), pair(0.9, 3), pair(1, 2)]);
    const wheel = summarizePairs([pair(0.97, 1.2), pair(0.99, 1.8), pair(0.93, 1)]);
    expect(wheel.py_first_batch_median_s).toBe(1.2);
    const ratios = ratiosOf({}, undefined, { ec_python: checkout, ec_python_wheel: wheel });
    // Each row's own median pair; first batch medians 1.2 s over 2 s.
    expect(ratios).toMatchObject({
      ec_python_vs_ts: 0.96,
      ec_python_wheel_vs_ts: 0.97,
      python_first_batch_wheel_vs_checkout: 0.6,
    });
    const byRatio = Object.fromEntries(targetsOf(ratios).map((t) => [t.ratio, t]));
    expect(byRatio.ec_python_wheel_vs_ts).toMatchObject({ min: 0.95, met: true });
    expect(byRatio.python_first_batch_wheel_vs_checkout).toBeUndefined();
  });

  it("ends the pairs with the outcome of a run that was skipped", async () => {
    const ctx = { config: parseCompareArgs([]) } as RowContext;
    const skipped = { kind: "skipped", reason: "no Python" } as const;
    const r = await runPythonPairs(
      ctx,
      3,
      async () => measured(10, 10),
      async () => skipped,
      () => 0,
      () => {},
    );
    expect(r).toEqual({ outcome: skipped });
  });
});

describe("compare flags", () => {
  it("always runs the local row first, since the others decode its clips", () => {
    expect(parseCompareArgs(["--rows", "torch,naive"]).rows).toEqual(["local", "naive", "torch"]);
    // The wheel row builds and installs the wheel first: only when named.
    expect(parseCompareArgs([]).rows).not.toContain("ec_python_wheel");
    expect(parseCompareArgs(["--rows", "ec_python_wheel,ec_cold"]).rows).toEqual([
      "local",
      "ec_cold",
      "ec_python_wheel",
    ]);
  });

  it("gives the slow rows (naive, torch) the first 128 clips unless told otherwise", () => {
    expect(parseCompareArgs([]).slowClips).toBe(128);
    expect(parseCompareArgs(["--slow-clips", "32"]).slowClips).toBe(32);
    expect(() => parseCompareArgs(["--slow-clips", "0"])).toThrow(/--slow-clips/);
  });

  it("warms the origin-cache up with 64 clips unless told otherwise, 0 turning it off", () => {
    expect(parseCompareArgs([]).cacheWarmupClips).toBe(64);
    expect(parseCompareArgs(["--cache-warmup-clips", "0"]).cacheWarmupClips).toBe(0);
    expect(() => parseCompareArgs(["--cache-warmup-clips", "x"])).toThrow(
      /Expected a number ≥ 0 for --cache-warmup-clips but received/,
    );
  });

  it("says what it expected when a flag is wrong", () => {
    expect(() => parseCompareArgs(["--rows", "local,tensorflow"])).toThrow(
      /Expected rows among .* but received "tensorflow"/,
    );
    expect(() => parseCompareArgs(["--clips=-3"])).toThrow(/Expected a number ≥ 1 for --clips but received/);
    expect(() => parseCompareArgs(["--size", "big"])).toThrow(/Expected WxH/);
  });
});

describe("compare CPU sets", () => {
  it("splits the cores into a client and a remote side, one each on two cores", async () => {
    const { defaultCpuSets, parseCpuList, onClient } = await import("../../bench/compare/cpu-sets.js");
    expect(defaultCpuSets(2)).toEqual({ client: [0], remote: [1] });
    expect(defaultCpuSets(16)).toEqual({ client: [...Array(12).keys()], remote: [12, 13, 14, 15] });
    expect(defaultCpuSets(1).unpinned).toBeDefined();
    expect(parseCpuList("0-2,5,1")).toEqual([0, 1, 2, 5]);
    expect(() => parseCpuList("a")).toThrow(/Expected a CPU list/);
    expect(onClient({ client: [0], remote: [1] }, "node", ["x.js"])).toEqual({
      command: expect.stringMatching(/(^|\/)taskset$/),
      args: ["-c", "0", "node", "x.js"],
    });
    expect(onClient({ client: [0], remote: [0], unpinned: "one core" }, "node", ["x.js"])).toEqual({
      command: "node",
      args: ["x.js"],
    });
  });

  it("takes the sets from flags, both or neither, and sizes workers to the client side", () => {
    const c = parseCompareArgs(["--client-cpus", "0-2", "--remote-cpus", "3"]);
    expect(c.cpus).toEqual({ client: [0, 1, 2], remote: [3] });
    expect(c.workers).toBe(3);
    expect(() => parseCompareArgs(["--client-cpus", "0"])).toThrow(/together/);
    expect(parseCompareArgs(["--no-pin"]).cpus.unpinned).toBe("--no-pin");
  });

  it("reports client CPU per frame and its ratios to local", () => {
    const ran = (cpuPerClip: number): RowResult => ({
      label: "r",
      status: "ran",
      figures: figuresOf(measured(10, 10, { cpuSeconds: 10 * cpuPerClip }), undefined),
    });
    const ratios = ratiosOf({ local: ran(0.16), ec_cold: ran(0.2), ec_warm: ran(0.16) }, undefined);
    const local = ran(0.16);
    expect(local.status === "ran" ? local.figures.client_cpu_ms_per_frame : undefined).toBe(10);
    expect(ratios).toMatchObject({ client_cpu_cold_vs_local: 1.25, client_cpu_warm_vs_local: 1 });
    const byRatio = Object.fromEntries(targetsOf(ratios).map((t) => [t.ratio, t]));
    expect(byRatio.client_cpu_cold_vs_local).toMatchObject({ met: false });
    expect(byRatio.client_cpu_warm_vs_local).toMatchObject({ met: true });
  });
});
