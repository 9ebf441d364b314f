import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { gzip } from "../../common/dataset-table/digest.js";
import { decodePageBytes, PAGE_FORMAT_VERSION } from "../../common/dataset-table/page-codec.js";
import { tableKeys } from "../../common/dataset-table/table-keys.js";
import type { TableEntryV1 } from "../../common/schema/index.js";
import { writeGeneration } from "../../edge/table/publish.js";
import { pagesOf, readTable } from "./table-helpers.js";

const entry = (i: number, etag = "e"): TableEntryV1 => ({
  key: `fmt/o-${String(i).padStart(3, "0")}.mp4`,
  size: 1000 + i,
  etag: `"${etag}${i}"`,
  kind: "video",
  frames: 24,
  keyframes: [0, 12],
  codec: "h264",
  width: 64,
  height: 48,
});

async function pageBytes(name: string, root = "fmt"): Promise<Uint8Array> {
  const got = await env.BUCKET.get(tableKeys.page(root, name));
  return new Uint8Array(await new Response(got!.body.pipeThrough(new DecompressionStream("gzip"))).arrayBuffer());
}

describe("table pages written as JSON (page format 1) before columns", () => {
  it("are merged by the publisher into the next generation, which it writes as columns", async () => {
    const first = Array.from({ length: 5 }, (_, i) => entry(i));
    const g1 = await writeGeneration(env, "fmt", undefined, new Map(first.map((e) => [e.key, e])), 1000);
    expect((await pagesOf(g1)).map((p) => p.name)).toEqual(["1-0"]);
    // The page as an edge before columns stored it.
    await env.BUCKET.put(
      tableKeys.page("fmt", "1-0"),
      await gzip(new TextEncoder().encode(JSON.stringify({ version: 1, root: "fmt", entries: first }))),
    );
    const changed = entry(2, "v2-");
    const g2 = await writeGeneration(env, "fmt", g1, new Map([[changed.key, changed]]), 2000);
    expect((await pagesOf(g2)).map((p) => p.name)).toEqual(["2-0"]);
    expect(new TextDecoder().decode((await pageBytes("2-0")).subarray(0, 4))).toBe("ECTC");
    expect((await readTable("fmt", g2.generation))!.entries).toEqual([first[0], first[1], changed, first[3], first[4]]);
  });
});

describe("table pages the publisher writes", () => {
  it("store their shards (page format 4), as many as the page's ref counts, cut by the page-local rule", async () => {
    // Objects of 30 MB: several to a shard at any target of tens of MB, a shard of their own past it.
    const entries = Array.from({ length: 60 }, (_, i) => ({
      ...entry(i),
      key: `fmt4/o-${String(i).padStart(3, "0")}.mp4`,
      size: 30_000_000 + i,
    }));
    const head = await writeGeneration(env, "fmt4", undefined, new Map(entries.map((e) => [e.key, e])), 1000);
    const [ref] = await pagesOf(head);
    const bytes = await pageBytes(ref!.name, "fmt4");
    expect(new DataView(bytes.buffer, bytes.byteOffset).getUint32(4, true)).toBe(PAGE_FORMAT_VERSION);
    const got = decodePageBytes(bytes).entries;
    const starts = got.shardStarts(head.shardBytes)!;
    expect(starts.length).toBe(ref!.shards);
    expect(starts.length).toBeGreaterThan(1);
    expect(got.decoded).toBe(0);
    expect(entries.map((e, i) => got.entry(i, e.etag))).toEqual(entries);
  });
});
