/** Small inline SVG charts: no library, no external asset, readable without scripts. */
import type { Histogram } from "./summary.js";

/** Escapes text for HTML and SVG element content and attribute values. */
export function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const fmt = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(2));

/**
 * A vertical bar chart of one histogram, with axis labels and a tooltip per bar.
 *
 * @example
 * const svg = histogramSvg({ name: "motion", unit: "", edges: [0, 1, 2], counts: [3, 1] });
 */
export function histogramSvg(h: Histogram, width = 420, height = 200): string {
  const pad = { l: 40, r: 10, t: 10, b: 36 };
  const plotW = width - pad.l - pad.r;
  const plotH = height - pad.t - pad.b;
  const max = Math.max(1, ...h.counts);
  const bw = plotW / Math.max(1, h.counts.length);
  const bars = h.counts
    .map((c, i) => {
      const bh = (c / max) * plotH;
      const x = pad.l + i * bw;
      const tip = `${fmt(h.edges[i]!)}–${fmt(h.edges[i + 1]!)}: ${c} clip${c === 1 ? "" : "s"}`;
      return `<rect class="bar" x="${x.toFixed(1)}" y="${(pad.t + plotH - bh).toFixed(1)}" width="${Math.max(1, bw - 1).toFixed(1)}" height="${bh.toFixed(1)}" data-count="${c}"><title>${esc(tip)}</title></rect>`;
    })
    .join("");
  const axis =
    `<line x1="${pad.l}" y1="${pad.t + plotH}" x2="${pad.l + plotW}" y2="${pad.t + plotH}" class="axis"/>` +
    `<line x1="${pad.l}" y1="${pad.t}" x2="${pad.l}" y2="${pad.t + plotH}" class="axis"/>`;
  const labels =
    `<text x="${pad.l}" y="${height - 20}" class="tick">${fmt(h.edges[0]!)}</text>` +
    `<text x="${pad.l + plotW}" y="${height - 20}" class="tick" text-anchor="end">${fmt(h.edges.at(-1)!)}</text>` +
    `<text x="${pad.l - 4}" y="${pad.t + 10}" class="tick" text-anchor="end">${max}</text>` +
    `<text x="${pad.l - 4}" y="${pad.t + plotH}" class="tick" text-anchor="end">0</text>` +
    `<text x="${pad.l + plotW / 2}" y="${height - 4}" class="caption" text-anchor="middle">${esc(h.unit)}</text>`;
  return `<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" aria-label="${esc(h.name)}" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">${axis}${bars}${labels}</svg>`;
}

/**
 * A horizontal bar chart of named counts (clips per flag).
 *
 * @example
 * const svg = countsSvg([{ name: "black", count: 4 }], 40);
 */
export function countsSvg(items: readonly { name: string; count: number }[], total: number, width = 520): string {
  const row = 22;
  const labelW = 170;
  const height = Math.max(row, items.length * row) + 8;
  const max = Math.max(1, ...items.map((i) => i.count));
  const bars = items
    .map((it, i) => {
      const y = 4 + i * row;
      const w = ((width - labelW - 70) * it.count) / max;
      const share = total > 0 ? ` (${((100 * it.count) / total).toFixed(1)}%)` : "";
      return (
        `<text x="${labelW - 6}" y="${y + 15}" class="label" text-anchor="end">${esc(it.name)}</text>` +
        `<rect class="bar" x="${labelW}" y="${y + 3}" width="${Math.max(1, w).toFixed(1)}" height="${row - 6}" data-count="${it.count}"><title>${esc(`${it.name}: ${it.count}${share}`)}</title></rect>` +
        `<text x="${(labelW + w + 6).toFixed(1)}" y="${y + 15}" class="tick">${it.count}</text>`
      );
    })
    .join("");
  return `<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" aria-label="clips per flag" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">${bars}</svg>`;
}
