import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { tableKeys, tablePrefix } from "../../common/dataset-table/table-keys.js";
import type { TableEntryV1, TableHeadV1 } from "../../common/schema/index.js";
import { collectTable, retentionOf } from "../../edge/table/collect.js";
import { readHead, writeGeneration } from "../../edge/table/publish.js";
import { pagesOf, readTable } from "./table-helpers.js";

const entry = (root: string, i: number, etag = "e"): TableEntryV1 => ({
  key: `${root}/o-${String(i).padStart(5, "0")}.npy`,
  size: 100,
  etag: `"${etag}${i}"`,
  kind: "array",
  frames: 1,
});

/** Generation 1 with `first` entries (3 pages at 2500), then one generation per `later` change, the n-th created at 1000 × (n + 1). */
async function generations(root: string, first: number, later: readonly TableEntryV1[]): Promise<TableHeadV1[]> {
  const heads: TableHeadV1[] = [];
  let head = await writeGeneration(
    env,
    root,
    undefined,
    new Map(Array.from({ length: first }, (_, i) => [entry(root, i).key, entry(root, i)])),
    1000,
  );
  heads.push(head);
  for (const [n, e] of later.entries()) {
    head = await writeGeneration(env, root, head, new Map([[e.key, e]]), 1000 * (n + 2));
    heads.push(head);
  }
  return heads;
}

async function stored(prefix: string): Promise<string[]> {
  const listed = await env.BUCKET.list({ prefix });
  return listed.objects.map((o) => o.key.slice(prefix.length)).sort();
}

describe("garbage collection of old table generations (local R2)", () => {
  it("keeps the newest N generations, drops the older ones and the pages only they referenced", async () => {
    // Generation 1: 3 pages; 2 rewrites its last page; 3 its first; 4 its last again.
    const heads = await generations("gca", 2500, [
      entry("gca", 2499, "v2-"),
      entry("gca", 0, "v3-"),
      entry("gca", 2400, "v4-"),
    ]);
    const lists = await Promise.all(heads.map(pagesOf));
    expect(lists.map((pages) => pages.map((p) => p.name))).toEqual([
      ["1-0", "1-1", "1-2"],
      ["1-0", "1-1", "2-0"],
      ["3-0", "1-1", "2-0"],
      ["3-0", "1-1", "4-0"],
    ]);
    // One directory page each, named after the pages the generation wrote.
    expect(heads.map((h) => (h.version === 2 ? h.directories.map((d) => d.name) : []))).toEqual([
      ["1-3"],
      ["2-1"],
      ["3-1"],
      ["4-1"],
    ]);
    expect(await collectTable(env, "gca", { generations: 2, seconds: 1 }, 10_000)).toEqual({
      dropped: [1, 2],
      pages: 4,
    });
    expect(await stored(`${tablePrefix("gca")}gen/`)).toEqual(["3.json", "4.json"]);
    // 1-2 and directory 1-3 died with generation 1, 1-0 and 2-1 with 2; 2-0 is still generation 3's.
    expect(await stored(`${tablePrefix("gca")}pages/`)).toEqual(
      [...["1-1", "2-0", "3-0", "4-0"].flatMap((p) => [`${p}.json`, `${p}.pins`]), "3-1.json", "4-1.json"].sort(),
    );
    // What is kept reads whole, through the edge's routes.
    for (const g of [3, 4]) expect((await readTable("gca", g))!.entries).toHaveLength(2500);
    expect((await readTable("gca"))!.head.generation).toBe(4);
    // A second run has nothing to do and reads no dropped generation again.
    expect(await collectTable(env, "gca", { generations: 2, seconds: 1 }, 10_000)).toEqual({ dropped: [], pages: 0 });
    // The next publish rewrites 1-1 and lets generation 3 go, and 2-0 with it; 1-1 stays while generation 4 lists it.
    await writeGeneration(env, "gca", heads[3], new Map([[entry("gca", 1200).key, entry("gca", 1200, "v5-")]]), 6000);
    expect(await collectTable(env, "gca", { generations: 2, seconds: 1 }, 10_000)).toEqual({ dropped: [3], pages: 2 });
    expect(await stored(`${tablePrefix("gca")}pages/`)).toEqual(
      [...["1-1", "3-0", "4-0", "5-0"].flatMap((p) => [`${p}.json`, `${p}.pins`]), "4-1.json", "5-1.json"].sort(),
    );
  });

  it("keeps every generation younger than the minimum age, however many there are", async () => {
    await generations("gcb", 10, [entry("gcb", 1, "v2-"), entry("gcb", 2, "v3-"), entry("gcb", 3, "v4-")]);
    // Created at 1000, 2000, 3000, 4000; at 5000 a 3500 s minimum age keeps 2 and later.
    expect(await collectTable(env, "gcb", { generations: 1, seconds: 3500 }, 5000)).toEqual({ dropped: [1], pages: 2 });
    expect(await stored(`${tablePrefix("gcb")}gen/`)).toEqual(["2.json", "3.json", "4.json"]);
    expect((await readTable("gcb", 2))!.entries.find((e) => e.key === "gcb/o-00001.npy")!.etag).toBe('"v2-1"');
    expect(await readHead(env, "gcb", 1)).toBeUndefined();
    // Never the latest, even at a retention of none.
    expect(await collectTable(env, "gcb", { generations: 0, seconds: 0 }, 1e9)).toEqual({ dropped: [2, 3], pages: 4 });
    expect(await stored(`${tablePrefix("gcb")}gen/`)).toEqual(["4.json"]);
    expect((await readTable("gcb"))!.entries).toHaveLength(10);
    expect(await env.BUCKET.head(tableKeys.head("gcb"))).not.toBeNull();
  });

  it("reads its retention from the deployment's variables", () => {
    expect(retentionOf(env)).toEqual({ generations: 16, seconds: 604_800 });
  });
});
