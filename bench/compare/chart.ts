/** A horizontal bar chart of clips/s per row as a standalone SVG (no dependencies, opens in any browser). */
import type { RowName } from "./args.js";
import type { RowResult } from "./figures.js";

const esc = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * Renders clips/s per row, each bar labelled with its ratio to local files.
 *
 * @example
 * await writeFile("bench/results/compare.svg", renderChart(rows, "8 × 640x360 h264, 64 clips"));
 */
export function renderChart(rows: Partial<Record<RowName, RowResult>>, subtitle: string): string {
  const ran = Object.values(rows).filter((r): r is Extract<RowResult, { status: "ran" }> => r?.status === "ran");
  const max = Math.max(1e-9, ...ran.map((r) => r.figures.clips_per_s));
  const left = 260;
  const width = 820;
  const barMax = width - left - 130;
  const rowH = 34;
  const top = 64;
  const height = top + ran.length * rowH + 30;
  const bars = ran.map((r, i) => {
    const y = top + i * rowH;
    const w = Math.max(1, (r.figures.clips_per_s / max) * barMax);
    const ratio = r.figures.vs_local === null ? "" : ` (×${r.figures.vs_local.toFixed(2)} local)`;
    return [
      `<text x="${left - 10}" y="${y + 18}" text-anchor="end">${esc(r.label)}</text>`,
      `<rect x="${left}" y="${y + 4}" width="${w.toFixed(1)}" height="${rowH - 10}" fill="${r.label.startsWith("ec") || r.label.startsWith("local") ? "#f38020" : "#8a8f98"}"/>`,
      `<text x="${(left + w + 6).toFixed(1)}" y="${y + 18}">${r.figures.clips_per_s.toFixed(1)}${esc(ratio)}</text>`,
    ].join("");
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="13">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="16" y="26" font-size="17" font-weight="bold">Clips per second, same clips, one machine</text>`,
    `<text x="16" y="46" fill="#555">${esc(subtitle)}</text>`,
    ...bars,
    `</svg>`,
    "",
  ].join("\n");
}
