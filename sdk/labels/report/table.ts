/** The terminal form of a label summary: plain aligned text, no colors, so logs stay clean. */
import type { Histogram, LabelSummary } from "./summary.js";

function table(head: readonly string[], rows: readonly (readonly string[])[], right: ReadonlySet<number>): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (right.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(head), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

const pct = (n: number, of: number) => (of === 0 ? "0.0%" : `${((100 * n) / of).toFixed(1)}%`);

function sparkline(h: Histogram): string {
  const bars = " ▁▂▃▄▅▆▇█";
  const max = Math.max(1, ...h.counts);
  return h.counts.map((c) => bars[c === 0 ? 0 : Math.max(1, Math.round((8 * c) / max))]).join("");
}

/**
 * Renders the summary as text tables: totals, clips per flag, worst objects, histograms.
 *
 * @example
 * process.stdout.write(renderTable(summarize(records)) + "\n");
 */
export function renderTable(s: LabelSummary): string {
  const parts: string[] = [];
  parts.push(
    table(
      ["clips", "objects", "valid", "invalid", "errors"],
      [
        [
          String(s.clips),
          String(s.objects),
          `${s.valid} (${pct(s.valid, s.clips)})`,
          `${s.invalid} (${pct(s.invalid, s.clips)})`,
          `${s.errored} (${pct(s.errored, s.clips)})`,
        ],
      ],
      new Set([0, 1, 2, 3, 4]),
    ),
  );
  parts.push(
    s.flags.length === 0
      ? "no flags"
      : table(
          ["flag", "clips", "share"],
          s.flags.map((f) => [f.flag, String(f.clips), pct(f.clips, s.clips)]),
          new Set([1, 2]),
        ),
  );
  if (s.worst.length > 0) {
    parts.push(
      table(
        ["worst objects", "bad/clips", "flags"],
        s.worst.map((w) => [w.key, `${w.bad}/${w.clips}`, w.flags.join(", ")]),
        new Set([1]),
      ),
    );
  }
  parts.push(
    table(
      ["histogram", "range", "distribution"],
      s.histograms.map((h) => [h.name, `${h.edges[0]}–${h.edges.at(-1)}`, `|${sparkline(h)}|`]),
      new Set(),
    ),
  );
  return parts.join("\n\n");
}
