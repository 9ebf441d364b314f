/**
 * The local data plane's wire on the client's main thread, per plan window: reading a batched
 * locate's answer (the object form validated with zod against the compact form checked by hand)
 * and writing the window's batch (every span by signed URL against by object id), side by side
 * in alternating rounds. No network: the cost of the bytes and the checks alone.
 *
 *   node dist/bench/locate-wire.js [--spans 16] [--runs 3] [--objects 8] [--iterations 2000] [--rounds 5] [--json]
 */
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { LocateBatchLine, type LocatedSpan } from "../common/schema/cache-locate.js";
import { compactAnswer } from "../origin-cache/core/compact-runs.js";
import { readCompactLine } from "../sdk/source/compact-lines.js";
import { ObjectIdClient } from "../sdk/source/object-ids.js";
import { median } from "./stats.js";

const { values } = parseArgs({
  options: {
    spans: { type: "string", default: "16" },
    runs: { type: "string", default: "3" },
    objects: { type: "string", default: "8" },
    iterations: { type: "string", default: "2000" },
    rounds: { type: "string", default: "5" },
    json: { type: "boolean", default: false },
  },
});
const SPANS = Number(values.spans);
const RUNS = Number(values.runs);
const OBJECTS = Number(values.objects);
const ITERATIONS = Number(values.iterations);
const ROUNDS = Number(values.rounds);

/** As the bench edge signs them: origin, key, expiry and a 64-hex signature. */
const url = (i: number): string =>
  `https://127.0.0.1:40123/v1/objects/bench/clip-${i}.mp4?exp=1796000000&sig=${"0123456789abcdef".repeat(4)}`;
const slab = (i: number): string => `/tmp/ec-bench-Ab12Cd/cache/slabs/slab-${String(i).padStart(4, "0")}`;

const spans = Array.from({ length: SPANS }, (_, s) => ({
  url: url(s % OBJECTS),
  etag: `"${(s % OBJECTS).toString(16).padStart(32, "0")}"`,
  offset: s * 150_000,
  length: 140_000,
  min: 120_000,
}));
const located: LocatedSpan[] = spans.map((s, k) => ({
  etag: s.etag,
  size: 4_000_000,
  runs: Array.from({ length: RUNS }, (_, r) => ({
    path: slab((k + r) % 4),
    offset: (k * RUNS + r) * 69_632,
    length: 16_384,
  })),
}));
const line = {
  at: spans.map((_, i) => i),
  spans: located,
  lease: { id: "lease-0123456789", expiresAt: 1_796_000_000_000 },
};
const objectText = JSON.stringify(line);
const compactText = JSON.stringify(compactAnswer(line));
const ids = new ObjectIdClient("host:1234:0:abcd1234");
ids.refer(spans).confirm();
const byUrl = () => JSON.stringify({ spans, waitMs: 20_000, form: "compact" });
const byId = () => {
  const ref = ids.refer(spans);
  const byIds = spans.map((s, i) => ({ object: ref.ids[i], offset: s.offset, length: s.length, min: s.min }));
  return JSON.stringify({ client: ids.client, spans: byIds, waitMs: 20_000, form: "compact" });
};

/** µs per call of `fn`, over ITERATIONS calls. */
function time(fn: () => unknown): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < ITERATIONS; i++) fn();
  return Number(process.hrtime.bigint() - t0) / 1000 / ITERATIONS;
}

const sides = {
  read_object_zod: () => LocateBatchLine.parse(JSON.parse(objectText)),
  read_compact: () => readCompactLine(compactText),
  write_by_url: byUrl,
  write_by_id: byId,
};
type Side = keyof typeof sides;
const samples = Object.fromEntries(Object.keys(sides).map((k) => [k, [] as number[]])) as Record<Side, number[]>;
for (const fn of Object.values(sides)) time(fn); // warm-up: compiled before the rounds
for (let r = 0; r < ROUNDS; r++) for (const [k, fn] of Object.entries(sides)) samples[k as Side].push(time(fn));

const us = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)])) as Record<Side, number>;
const result = {
  spans: SPANS,
  runs_per_span: RUNS,
  objects: OBJECTS,
  load_average: loadavg()[0] ?? 0,
  answer_bytes: { object: objectText.length, compact: compactText.length },
  request_bytes: { by_url: byUrl().length, by_id: byId().length },
  us_per_window: us,
  read_compact_vs_object: us.read_compact / us.read_object_zod,
  write_by_id_vs_url: us.write_by_id / us.write_by_url,
};
if (values.json) console.log(JSON.stringify(result));
else {
  console.log(
    `window of ${SPANS} spans × ${RUNS} runs over ${OBJECTS} objects, load ${result.load_average.toFixed(1)}`,
  );
  console.log(`answer bytes: object form ${objectText.length}, compact ${compactText.length}`);
  console.log(`request bytes: by URL ${result.request_bytes.by_url}, by id ${result.request_bytes.by_id}`);
  for (const [k, v] of Object.entries(us))
    console.log(
      `${k.padEnd(16)} ${v.toFixed(2)} µs (rounds ${samples[k as Side].map((x) => x.toFixed(1)).join(", ")})`,
    );
  console.log(
    `compact / object read: ${result.read_compact_vs_object.toFixed(3)}; by id / by URL write: ${result.write_by_id_vs_url.toFixed(3)}`,
  );
}
