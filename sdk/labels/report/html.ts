/**
 * The HTML form of a label summary: one self-contained file (inline CSS, SVG and script, no
 * external asset) that opens in any browser.
 */
import { countsSvg, esc, histogramSvg } from "./svg.js";
import type { LabelSummary, ObjectSummary } from "./summary.js";
import type { ClipThumbnail } from "./thumbnails.js";

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2330;background:#fbfbfd}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}
.meta{color:#5a6275}.totals{display:flex;gap:16px;margin:16px 0}
.totals div{background:#fff;border:1px solid #dfe2ea;border-radius:6px;padding:8px 14px}
.totals b{display:block;font-size:20px}
.charts{display:flex;flex-wrap:wrap;gap:16px}.charts figure{margin:0;background:#fff;border:1px solid #dfe2ea;border-radius:6px;padding:8px}
figcaption{font-weight:600;margin-bottom:4px}
.bar{fill:#4a6fd8}.bar.hot{fill:#d8584a}.axis{stroke:#8a90a0}.tick,.label,.caption{font-size:11px;fill:#3a4150}
table{border-collapse:collapse;background:#fff}th,td{border:1px solid #dfe2ea;padding:4px 8px;text-align:left}
th{cursor:pointer;background:#f0f2f7}td.n{text-align:right}
.strip{background:#fff;border:1px solid #dfe2ea;border-radius:6px;padding:8px 12px;margin:0 0 12px}
.strip h3{font-size:14px;margin:0 0 6px}.strip .clips{display:flex;flex-wrap:wrap;gap:12px}
.strip figure{margin:0}.strip img{display:block;image-rendering:pixelated;border:1px solid #dfe2ea}
.strip figcaption{font-size:12px;color:#5a6275}.strip .invalid figcaption{color:#b43b2f}
`;

// Runs after the page is parsed: hover highlight, sortable table, then the marker a headless check reads.
const SCRIPT = `
(function(){
  var data = JSON.parse(document.getElementById("ec-data").textContent);
  var bars = document.querySelectorAll("svg.chart .bar");
  bars.forEach(function(b){
    b.addEventListener("mouseenter", function(){ b.classList.add("hot"); });
    b.addEventListener("mouseleave", function(){ b.classList.remove("hot"); });
  });
  var table = document.getElementById("worst");
  if (table) table.querySelectorAll("th").forEach(function(th, col){
    th.addEventListener("click", function(){
      var rows = Array.prototype.slice.call(table.tBodies[0].rows);
      var num = th.dataset.num === "1";
      rows.sort(function(a, b){
        var x = a.cells[col].dataset.v || a.cells[col].textContent, y = b.cells[col].dataset.v || b.cells[col].textContent;
        return num ? Number(y) - Number(x) : String(x).localeCompare(String(y));
      });
      rows.forEach(function(r){ table.tBodies[0].appendChild(r); });
    });
  });
  var charts = document.querySelectorAll("svg.chart").length;
  document.documentElement.setAttribute("data-ec-report", "ready:" + charts + ":" + data.clips);
  document.title = document.title + " (" + data.clips + " clips)";
  // Once the inline thumbnails are decoded: how many show a picture (a headless check reads it).
  window.addEventListener("load", function(){
    var shown = Array.prototype.filter.call(document.querySelectorAll(".strip img"), function(i){ return i.complete && i.naturalWidth > 0; });
    document.documentElement.setAttribute("data-ec-thumbnails", "shown:" + shown.length + ":" + document.querySelectorAll(".strip img").length);
  });
})();
`;

/** One strip per worst object: a picture (first, middle, last frame) of each kept flagged clip. */
function stripsHtml(
  worst: readonly ObjectSummary[],
  thumbnails: ReadonlyMap<string, readonly ClipThumbnail[]>,
): string {
  return worst
    .map((w) => {
      const clips = thumbnails.get(w.key) ?? [];
      const figures = clips
        .map((c) => {
          const caption = `frame ${c.start}: ${c.flags.join(", ")}`;
          const body = c.src
            ? `<img src="${c.src}" alt="${esc(`${w.key} ${caption}`)}">`
            : `<div>${esc(c.note ?? "no picture")}</div>`;
          return `<figure class="${c.valid ? "flagged" : "invalid"}">${body}<figcaption>${esc(caption)}</figcaption></figure>`;
        })
        .join("");
      const none = w.errors === w.bad ? "Only decode errors: no frames to show." : "No flagged clip was kept.";
      return `<div class="strip" data-object="${esc(w.key)}"><h3>${esc(w.key)}</h3><div class="clips">${figures || `<p>${none}</p>`}</div></div>`;
    })
    .join("");
}

/**
 * Renders the summary as a standalone HTML page; with `thumbnails` (from a ThumbnailCollector),
 * a strip of the flagged clips' first, middle and last frames under each worst object.
 *
 * @example
 * await writeFile("labels.html", renderHtml(summarize(records), { dataset: url }));
 */
export function renderHtml(
  s: LabelSummary,
  o: { dataset: string; generatedAt?: Date; thumbnails?: ReadonlyMap<string, readonly ClipThumbnail[]> },
): string {
  const when = (o.generatedAt ?? new Date()).toISOString();
  const total = (label: string, n: number) => `<div>${esc(label)}<b>${n}</b></div>`;
  const flags =
    s.flags.length === 0
      ? "<p>No clip was flagged.</p>"
      : countsSvg(
          s.flags.map((f) => ({ name: f.flag, count: f.clips })),
          s.clips,
        );
  const worst =
    s.worst.length === 0
      ? "<p>No object has a bad clip.</p>"
      : `<table id="worst"><thead><tr><th>object</th><th data-num="1">bad share</th><th data-num="1">bad</th><th data-num="1">clips</th><th>flags</th></tr></thead><tbody>${s.worst
          .map(
            (w) =>
              `<tr><td>${esc(w.key)}</td><td class="n" data-v="${w.bad / w.clips}">${((100 * w.bad) / w.clips).toFixed(1)}%</td><td class="n">${w.bad}</td><td class="n">${w.clips}</td><td>${esc(w.flags.join(", "))}</td></tr>`,
          )
          .join("")}</tbody></table>`;
  const charts = s.histograms
    .map((h) => `<figure><figcaption>${esc(h.name)}</figcaption>${histogramSvg(h)}</figure>`)
    .join("");
  // "<" escaped so no key can close the script element.
  const json = JSON.stringify(s).replace(/</g, "\\u003c");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>ec labels: ${esc(o.dataset)}</title><style>${STYLE}</style></head>
<body>
<h1>Clip labels</h1><div class="meta">${esc(o.dataset)} · ${esc(when)}</div>
<div class="totals">${total("clips", s.clips)}${total("objects", s.objects)}${total("valid", s.valid)}${total("invalid", s.invalid)}${total("decode errors", s.errored)}</div>
<h2>Clips per flag</h2>${flags}
<h2>Distributions</h2><div class="charts">${charts}</div>
<h2>Worst objects</h2>${worst}
${o.thumbnails && s.worst.length > 0 ? `<h2>What was flagged</h2><p class="meta">First, middle and last frame of each flagged clip.</p>${stripsHtml(s.worst, o.thumbnails)}` : ""}
<script type="application/json" id="ec-data">${json}</script>
<script>${SCRIPT}</script>
</body></html>
`;
}
