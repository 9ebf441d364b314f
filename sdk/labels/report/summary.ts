/** A dataset's labels in numbers: what `ec labels` prints and plots. */
import type { ClipLabels } from "../label-clip.js";

/** One clip as the report sees it: labeled, or refused before labeling (decode error). */
export interface LabeledClip {
  readonly key: string;
  readonly start: number;
  readonly labels?: ClipLabels;
  /** The error code when the clip could not be produced (corrupt object, failed fetch or decode). */
  readonly error?: string;
}

export interface Histogram {
  readonly name: string;
  readonly unit: string;
  /** Bin edges, one more than `counts`; the last bin includes its upper edge. */
  readonly edges: readonly number[];
  readonly counts: readonly number[];
}

export interface ObjectSummary {
  readonly key: string;
  readonly clips: number;
  /** Clips that failed validation or could not be decoded. */
  readonly bad: number;
  readonly errors: number;
  /** Flags over the object's clips, most frequent first. */
  readonly flags: readonly string[];
}

export interface LabelSummary {
  readonly clips: number;
  readonly objects: number;
  readonly valid: number;
  readonly invalid: number;
  readonly errored: number;
  /** Clips per flag (and per error code, as `error:CODE`), most frequent first. */
  readonly flags: readonly { readonly flag: string; readonly clips: number }[];
  /** Objects with the largest share of bad clips. */
  readonly worst: readonly ObjectSummary[];
  readonly histograms: readonly Histogram[];
}

function histogram(
  name: string,
  unit: string,
  values: readonly number[],
  lo: number,
  hi: number,
  bins: number,
): Histogram {
  const width = (hi - lo) / bins;
  const edges = Array.from({ length: bins + 1 }, (_, i) => Math.round((lo + i * width) * 1e6) / 1e6);
  const counts = new Array<number>(bins).fill(0);
  for (const v of values) counts[Math.min(bins - 1, Math.max(0, Math.floor((v - lo) / width)))]!++;
  return { name, unit, edges, counts };
}

function numeric(labels: ClipLabels | undefined, labeler: string, value: string): number | undefined {
  const v = labels?.results[labeler]?.values[value];
  return typeof v === "number" ? v : undefined;
}

/**
 * Counts per flag, the worst objects and histograms of motion, black and frozen ratios.
 *
 * @example
 * const s = summarize(records, { worst: 10 });
 * console.log(renderTable(s));
 */
export function summarize(clips: readonly LabeledClip[], o: { worst?: number; bins?: number } = {}): LabelSummary {
  const bins = o.bins ?? 20;
  const flagCounts = new Map<string, number>();
  const objects = new Map<string, { clips: number; bad: number; errors: number; flags: Map<string, number> }>();
  const motion: number[] = [];
  const black: number[] = [];
  const frozen: number[] = [];
  let valid = 0;
  let invalid = 0;
  let errored = 0;
  for (const c of clips) {
    const obj = objects.get(c.key) ?? { clips: 0, bad: 0, errors: 0, flags: new Map<string, number>() };
    objects.set(c.key, obj);
    obj.clips++;
    const flags = c.error !== undefined ? [`error:${c.error}`] : (c.labels?.flags ?? []);
    for (const f of flags) {
      flagCounts.set(f, (flagCounts.get(f) ?? 0) + 1);
      obj.flags.set(f, (obj.flags.get(f) ?? 0) + 1);
    }
    if (c.error !== undefined) {
      errored++;
      obj.errors++;
      obj.bad++;
      continue;
    }
    if (c.labels?.valid === false) {
      invalid++;
      obj.bad++;
    } else {
      valid++;
    }
    const m = numeric(c.labels, "motion", "motion");
    if (m !== undefined) motion.push(m);
    const b = numeric(c.labels, "black", "blackRatio");
    if (b !== undefined) black.push(b);
    const z = numeric(c.labels, "frozen", "frozenRatio");
    if (z !== undefined) frozen.push(z);
  }
  const byCount = <T>(m: Map<T, number>) =>
    [...m].sort((a, b) => b[1] - a[1] || String(a[0]).localeCompare(String(b[0])));
  const worst = [...objects]
    .map(
      ([key, v]): ObjectSummary => ({
        key,
        clips: v.clips,
        bad: v.bad,
        errors: v.errors,
        flags: byCount(v.flags).map(([f]) => f),
      }),
    )
    .filter((w) => w.bad > 0)
    .sort((a, b) => b.bad / b.clips - a.bad / a.clips || b.bad - a.bad || a.key.localeCompare(b.key))
    .slice(0, o.worst ?? 10);
  const motionTop = Math.max(1, Math.ceil(Math.max(0, ...motion)));
  return {
    clips: clips.length,
    objects: objects.size,
    valid,
    invalid,
    errored,
    flags: byCount(flagCounts).map(([flag, n]) => ({ flag, clips: n })),
    worst,
    histograms: [
      histogram("motion", "mean |Δluma| per frame", motion, 0, motionTop, bins),
      histogram("black ratio", "share of black frames", black, 0, 1, bins),
      histogram("frozen ratio", "share of frozen frame pairs", frozen, 0, 1, bins),
    ],
  };
}
