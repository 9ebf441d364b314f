/** The figures as a text table for the terminal. */
import type { RowName } from "./args.js";
import type { RowResult, Target } from "./figures.js";

const COLUMNS: readonly [string, (f: Extract<RowResult, { status: "ran" }>["figures"]) => string][] = [
  ["clips/s", (f) => f.clips_per_s.toFixed(2)],
  ["frames/s", (f) => f.frames_per_s.toFixed(0)],
  ["steady clips/s", (f) => f.steady_clips_per_s.toFixed(2)],
  ["MB/s fetched", (f) => f.mb_per_s_fetched.toFixed(2)],
  ["KB/clip", (f) => (f.bytes_per_clip / 1000).toFixed(1)],
  ["req/clip", (f) => (f.requests_per_clip === null ? "-" : f.requests_per_clip.toFixed(2))],
  ["1st batch s", (f) => f.time_to_first_batch_s.toFixed(2)],
  ["stall", (f) => f.stall_ratio.toFixed(2)],
  ["peak MB", (f) => f.peak_rss_mb.toFixed(0)],
  ["CPU ms/frame", (f) => (f.cpu_s_per_frame * 1000).toFixed(2)],
  ["remote CPU s", (f) => f.remote_cpu_s.toFixed(1)],
  ["× local", (f) => (f.vs_local === null ? "-" : f.vs_local.toFixed(3))],
];

/**
 * Renders rows (skipped ones with their reason) and targets as aligned text.
 *
 * @example
 * process.stderr.write(renderTable(rows, targets));
 */
export function renderTable(rows: Partial<Record<RowName, RowResult>>, targets: readonly Target[]): string {
  const header = ["row", ...COLUMNS.map(([h]) => h)];
  const lines: string[][] = [header];
  const notes: string[] = [];
  for (const r of Object.values(rows)) {
    if (!r) continue;
    if (r.status === "ran") lines.push([r.label, ...COLUMNS.map(([, get]) => get(r.figures))]);
    else {
      lines.push([r.label, "skipped", ...COLUMNS.slice(1).map(() => "")]);
      notes.push(`  ${r.label}: skipped: ${r.reason}`);
    }
  }
  const widths = header.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
  const fmt = (l: string[]): string =>
    l.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  const out = [fmt(lines[0]!), widths.map((w) => "-".repeat(w)).join("  "), ...lines.slice(1).map(fmt)];
  if (notes.length > 0) out.push("", ...notes);
  out.push("", "targets:");
  for (const t of targets) {
    const state =
      t.met === null
        ? "not measured"
        : t.met
          ? `met (×${t.margin} of the bound)`
          : `MISSED (×${t.margin} of the bound)`;
    out.push(`  ${t.goal.padEnd(44)} ${t.ratio} = ${t.value ?? "-"}  ${state}`);
  }
  return `${out.join("\n")}\n`;
}
