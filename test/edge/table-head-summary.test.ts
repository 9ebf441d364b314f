import { env, SELF } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import { SetDigest } from "../../common/dataset-table/set-digest.js";
import type { TableEntryV1, TableHeadV1 } from "../../common/schema/index.js";
import { pageEntries } from "../../common/dataset-table/page-pins.js";
import { fetchTable } from "../../common/table-client.js";
import { writeGeneration } from "../../edge/table/publish.js";
import { BASE, TOKEN } from "./helpers.js";
import { eventually, pagesOf, readTable, tableRequest } from "./table-helpers.js";

const fixtures = inject("mediaFixtures");
const bytesOf = (name: string) => Uint8Array.from(atob(fixtures[name]!.bytes), (c) => c.charCodeAt(0));
const edgeFetch: typeof fetch = (url, init) => SELF.fetch(url as string, init);

/** Each page's summary recomputed from the page itself, as the routes serve it. */
async function summariesOf(prefix: string, head: TableHeadV1) {
  return Promise.all(
    (await pagesOf(head)).map(async (ref) => {
      const page = await tableRequest(prefix, `table/pages/${ref.name}`);
      const pins = ref.pins === undefined ? undefined : await tableRequest(prefix, `table/pins/${ref.name}`);
      const entries = pageEntries(
        new Uint8Array(await page.arrayBuffer()),
        pins && new Uint8Array(await pins.arrayBuffer()),
      );
      const digest = new SetDigest();
      for (const e of entries) digest.add(e.key, e.etag);
      return {
        summary: { digest: ref.digest, frames: ref.frames, keyframes: ref.keyframes, errors: ref.errors },
        expected: {
          digest: digest.toString(),
          frames: entries.reduce((n, e) => n + (e.kind === "video" ? (e.frames ?? 0) : 0), 0),
          keyframes: entries.reduce((n, e) => n + (e.keyframes?.length ?? 0), 0),
          errors: entries.filter((e) => e.kind === "error").length,
        },
      };
    }),
  );
}

const digestOf = (entries: readonly TableEntryV1[]) =>
  entries.reduce((d, e) => d.add(e.key, e.etag), new SetDigest()).toString();

describe("the table head's page summaries", () => {
  it("sums up each page the queue's publisher writes: digest, frames, keyframes, errors", async () => {
    const files = {
      "a.mp4": "h264-faststart.mp4",
      "b.mp4": "hevc.mp4",
      "bad.mp4": "truncated.mp4",
      "c.jpg": "image.jpg",
    };
    for (const [name, fixture] of Object.entries(files)) await env.BUCKET.put(`sum/${name}`, bytesOf(fixture));
    expect((await tableRequest("sum", "index", { method: "POST" })).status).toBe(202);
    const table = await eventually(async () => {
      const t = await readTable("sum");
      return t?.entries.length === 4 ? t : undefined;
    }, "a generation with all four objects");
    const pages = await summariesOf("sum", table.head);
    for (const p of pages) expect(p.summary).toEqual(p.expected);
    // The fixtures' own counts: 30 + 24 video frames, one corrupt object.
    expect(pages.reduce((n, p) => n + p.summary.frames!, 0)).toBe(54);
    expect(pages.reduce((n, p) => n + p.summary.errors!, 0)).toBe(1);
  });

  it("gives a client the dataset's digest from the head, and from the entries of pages the prefix cuts", async () => {
    const { entries: indexed } = (await readTable("sum"))!;
    // The same objects under two datasets of one root, a page per object: `sub/` starts and ends mid-page.
    const keys = ["sumb/a.mp4", "sumb/sub/a.mp4", "sumb/sub/b.mp4", "sumb/z.mp4"];
    const entries = keys.map((key, i) => ({ ...indexed[i]!, key }));
    const head = await writeGeneration(env, "sumb", undefined, new Map(entries.map((e) => [e.key, e])), 1000, 2);
    expect((await pagesOf(head)).map((p) => p.count)).toEqual([2, 2]);
    for (const p of await summariesOf("sumb", head)) expect(p.summary).toEqual(p.expected);
    const whole = (await fetchTable(`${BASE}/v1/datasets/sumb`, { token: TOKEN, fetch: edgeFetch }))!;
    expect(whole.digest).toBe(digestOf(entries));
    const sub = (await fetchTable(`${BASE}/v1/datasets/sumb/sub`, { token: TOKEN, fetch: edgeFetch }))!;
    expect(sub.entries.entries().map((e) => e.key)).toEqual(["sumb/sub/a.mp4", "sumb/sub/b.mp4"]);
    expect(sub.digest).toBe(digestOf(entries.slice(1, 3)));
    expect(sub.digest).not.toBe(whole.digest);
  });
});
