/**
 * The Python client against the TypeScript consumer, like for like: TypeScript and Python runs
 * alternate (ts, py, ts, py, …) over the same warm origin-cache and clips, and each ratio comes
 * from one adjacent pair's steady clips/s (after the first batch), so load that drifts between
 * runs a minute apart cancels; the time to first batch (the engine's start-up) is reported beside.
 */
import { figuresOf } from "./figures.js";
import { type PythonPair, type PythonPairs, summarizePairs } from "./pair-summary.js";
import type { RowContext, RowOutcome } from "./row.js";

type Ran = Extract<RowOutcome, { kind: "ran" }>;

const round = (x: number): number => Number(x.toPrecision(4));

/**
 * Runs `n` pairs, each a TypeScript run then a Python run; returns them and the Python run of
 * the median pair (the row's figures). A skipped run ends the pairs with its outcome.
 */
export async function runPythonPairs(
  ctx: RowContext,
  n: number,
  runTs: () => Promise<RowOutcome>,
  runPy: () => Promise<RowOutcome>,
  load: () => number,
  log: (msg: string) => void,
): Promise<{ outcome: RowOutcome; pairs?: PythonPairs }> {
  const batch = ctx.config.batch;
  const runs: { py: Ran; pair: PythonPair }[] = [];
  for (let i = 0; i < n; i++) {
    const ts = await runTs();
    if (ts.kind !== "ran") return { outcome: ts };
    const loadAverage = load();
    const py = await runPy();
    if (py.kind !== "ran") return { outcome: py };
    const t = figuresOf(ts, undefined, batch);
    const p = figuresOf(py, undefined, batch);
    const pair: PythonPair = {
      ts_steady_clips_per_s: t.steady_clips_per_s,
      py_steady_clips_per_s: p.steady_clips_per_s,
      ratio: t.steady_clips_per_s > 0 ? round(p.steady_clips_per_s / t.steady_clips_per_s) : 0,
      ratio_with_start: t.clips_per_s > 0 ? round(p.clips_per_s / t.clips_per_s) : 0,
      ts_first_batch_s: t.time_to_first_batch_s,
      py_first_batch_s: p.time_to_first_batch_s,
      load_average: loadAverage,
    };
    log(
      `  pair ${i + 1}/${n}: ts ${pair.ts_steady_clips_per_s} py ${pair.py_steady_clips_per_s} steady clips/s → ${pair.ratio} (first batch ts ${pair.ts_first_batch_s} s, py ${pair.py_first_batch_s} s; load ${loadAverage.toFixed(1)})`,
    );
    runs.push({ py, pair });
  }
  const pairs = summarizePairs(runs.map((r) => r.pair));
  const mid = runs.find((r) => r.pair.ratio === pairs.ratio_median) ?? runs[0]!;
  return { outcome: mid.py, pairs };
}
