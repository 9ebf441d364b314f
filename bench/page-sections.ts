/**
 * What a table page's bytes are made of: one page of 1000 entries as open-scale seeds them
 * (a small video each, its ETag the MD5 of its own bytes), each section gzipped on its own
 * and the whole page gzipped as stored, so a change of the page format is weighed by section.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/page-sections.js [--entries 1000] [--json]
 */
import { createHash } from "node:crypto";
import { parseArgs } from "node:util";
import { gzip } from "../common/dataset-table/digest.js";
import { encodePageBytes, pageSections } from "../common/dataset-table/page-codec.js";
import { syntheticEntry } from "./synthetic-table.js";

const { values } = parseArgs({
  options: { entries: { type: "string", default: "1000" }, json: { type: "boolean", default: false } },
});
const n = Number(values.entries);
const entries = Array.from({ length: n }, (_, i) => ({
  ...syntheticEntry(`scale/o-${String(i).padStart(6, "0")}.mp4`, i),
  // As R2 reports a single-part upload: an MD5, random bytes to gzip.
  etag: `"${createHash("md5").update(String(i)).digest("hex")}"`,
}));
const bytes = encodePageBytes("scale", entries);
const whole = (await gzip(bytes)).byteLength;
const rows = [];
for (const [name, part] of pageSections(bytes)) {
  if (part.byteLength === 0) continue;
  rows.push({ section: name, bytes: part.byteLength, gzip: (await gzip(part)).byteLength });
}
const result = {
  entries: n,
  page_bytes: bytes.byteLength,
  page_gzip: whole,
  per_object_gzip: whole / n,
  sections: rows,
};
if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
else {
  process.stdout.write(`${n} entries: ${bytes.byteLength} B, ${whole} B gzip (${(whole / n).toFixed(1)} B/object)\n`);
  for (const r of rows)
    process.stdout.write(
      `  ${r.section.padEnd(14)} ${String(r.bytes).padStart(7)} B  ${String(r.gzip).padStart(7)} B gzip (${((100 * r.gzip) / whole).toFixed(1)} %)\n`,
    );
}
