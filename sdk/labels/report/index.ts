export { summarize, type LabeledClip, type LabelSummary, type Histogram, type ObjectSummary } from "./summary.js";
export { renderTable } from "./table.js";
export { renderHtml } from "./html.js";
export { histogramSvg, countsSvg } from "./svg.js";
export { ThumbnailCollector, type ClipThumbnail } from "./thumbnails.js";
