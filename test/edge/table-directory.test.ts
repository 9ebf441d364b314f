import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { encodeDirectory } from "../../common/dataset-table/directory.js";
import { tableKeys } from "../../common/dataset-table/table-keys.js";
import { manifestSigner, signJson } from "../../common/manifest-sign.js";
import type { TableEntryV1, TableHeadV1 } from "../../common/schema/index.js";
import { allEntries, edgeTableStore, fetchTable, openTable } from "../../common/table-client.js";
import { recordEntry } from "../../edge/table/index-object.js";
import { publishTable, writeGeneration } from "../../edge/table/publish.js";
import { BASE, TOKEN } from "./helpers.js";
import { pagesOf, readTable } from "./table-helpers.js";

const entry = (root: string, i: number, etag = "e"): TableEntryV1 => ({
  key: `${root}/o-${String(i).padStart(5, "0")}.npy`,
  size: 100 + i,
  etag: `"${etag}${i}"`,
  kind: "array",
  frames: 1,
});

/** The environment with the bucket's puts and gets recorded by key: the bucket itself, not a stand-in. */
function recorded(): { env: Env; puts: string[]; gets: string[] } {
  const puts: string[] = [];
  const gets: string[] = [];
  const bucket = new Proxy(env.BUCKET, {
    get(target, prop) {
      const value = Reflect.get(target, prop);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (prop === "put") puts.push(String(args[0]));
        if (prop === "get") gets.push(String(args[0]));
        return value.apply(target, args);
      };
    },
  });
  return { env: { ...env, BUCKET: bucket }, puts, gets };
}

/** A table of 100 objects in 50 pages of 2, in 13 directory pages of 4 pages (2 in the last). */
async function seed(root: string) {
  const entries = Array.from({ length: 100 }, (_, i) => entry(root, 2 * i));
  const head = await writeGeneration(env, root, undefined, new Map(entries.map((e) => [e.key, e])), 1000, 2, {
    directoryTarget: 4,
  });
  return { entries, head };
}

const pagesPrefix = (root: string) => tableKeys.page(root, "").replace(/\.json$/, "");

describe("a generation that changes k pages writes those pages, their directory pages and the head", () => {
  it("publishes a change of one page of 50 with six puts, reading one directory page", async () => {
    const root = "dirk";
    const { entries, head: g1 } = await seed(root);
    expect(g1.version).toBe(2);
    expect(g1.version === 2 && g1.directories.length).toBe(13);
    const changed = entry(root, 46, "v2-");
    await recordEntry(env, root, changed);
    const r = recorded();
    const published = await publishTable(r.env, root, { pageTarget: 2, directoryTarget: 4, now: 2000 });
    expect(published).toMatchObject({ generation: 2, objects: 100, more: false });
    const under = pagesPrefix(root);
    // The page, its pins, its directory page; the generation, the head, the public keys.
    expect(r.puts.filter((k) => k.startsWith(under)).map((k) => k.slice(under.length))).toEqual([
      "2-0.json",
      "2-0.pins",
      "2-1.json",
    ]);
    expect(r.puts.filter((k) => !k.startsWith(under))).toEqual([
      tableKeys.generation(root, 2),
      tableKeys.head(root),
      tableKeys.publicKeys(),
    ]);
    // Reads: the head, the one directory page the change falls into, the page and its pins.
    const dirOf = g1.version === 2 ? g1.directories[2]!.name : "";
    expect(r.gets.filter((k) => k.startsWith(under)).sort()).toEqual(
      [`${dirOf}.json`, "1-11.json", "1-11.pins"].map((n) => `${under}${n}`).sort(),
    );
    // The head names directory pages only: small, and no page of generation 1 in it.
    const head = (await readTable(root))!;
    expect(head.head.version === 2 && head.head.directories.map((d) => d.name)).toEqual(
      g1.version === 2 ? g1.directories.map((d, i) => (i === 2 ? "2-1" : d.name)) : [],
    );
    expect(head.entries).toEqual(entries.map((e) => (e.key === changed.key ? changed : e)));
  }, 60_000);

  it("writes k pages and at most k directory pages for k pages changed", async () => {
    const root = "dirm";
    await seed(root);
    // Pages 1, 24, 25 and 49: four pages in three directory pages (0, 6, 12).
    for (const i of [3, 48, 51, 99]) await recordEntry(env, root, entry(root, 2 * i, "v2-"));
    const r = recorded();
    await publishTable(r.env, root, { pageTarget: 2, directoryTarget: 4, now: 2000 });
    const written = r.puts.filter((k) => k.startsWith(pagesPrefix(root)));
    // 4 pages with their pins, 3 directory pages.
    expect(written.filter((k) => k.endsWith(".pins"))).toHaveLength(4);
    expect(written).toHaveLength(4 * 2 + 3);
    expect(r.puts).toHaveLength(4 * 2 + 3 + 3);
  }, 60_000);
});

describe("a client reading a generation's page list lazily through the edge", () => {
  it("reads the head, then only the directory page that holds the pages asked for", async () => {
    const root = "dirlazy";
    const { head } = await seed(root);
    const all = await pagesOf(head);
    const asked: string[] = [];
    const edgeFetch: typeof fetch = (url, init) => {
      asked.push(new URL(String(url)).pathname);
      return SELF.fetch(url as string, init);
    };
    const { store, keys } = edgeTableStore(`${BASE}/v1/datasets/${root}`, { token: TOKEN, fetch: edgeFetch });
    const list = (await openTable(store, keys))!;
    expect([list.pageCount, list.entryCount]).toEqual([50, 100]);
    expect(await list.pagesAt(21, 23)).toEqual(all.slice(21, 23));
    const dirs = head.version === 2 ? head.directories : [];
    expect(asked).toEqual([
      "/v1/keys",
      `/v1/datasets/${root}/table`,
      `/v1/datasets/${root}/table/pages/${dirs[5]!.name}`,
    ]);
  }, 60_000);
});

describe("a table published before directory pages (head format 1)", () => {
  it("stays readable, and its next generation is written with directory pages", async () => {
    const root = "dirold";
    const { entries, head } = await seed(root);
    // Generation 1 as an edge before directory pages wrote it: its head lists every page.
    const pages = await pagesOf(head);
    const { directories, version, ...rest } = head as Extract<TableHeadV1, { version: 2 }>;
    const old: TableHeadV1 = { ...rest, version: 1, pages };
    const body = JSON.stringify(await signJson(old, await manifestSigner(env.EC_MANIFEST_KEY)));
    for (const key of [tableKeys.generation(root, 1), tableKeys.head(root)]) await env.BUCKET.put(key, body);
    for (const d of directories) await env.BUCKET.delete(tableKeys.page(root, d.name));
    const edgeFetch: typeof fetch = (url, init) => SELF.fetch(url as string, init);
    const before = (await fetchTable(`${BASE}/v1/datasets/${root}`, { token: TOKEN, fetch: edgeFetch }))!;
    expect(before.head.version).toBe(1);
    expect(await allEntries(before)).toEqual(entries);

    const changed = entry(root, 10, "v2-");
    await recordEntry(env, root, changed);
    await publishTable(env, root, { pageTarget: 2, directoryTarget: 4, now: 2000 });
    const after = (await fetchTable(`${BASE}/v1/datasets/${root}`, { token: TOKEN, fetch: edgeFetch }))!;
    expect(after.head.version).toBe(2);
    expect(after.pages.map((p) => p.name)).toEqual(pages.map((p) => (p.name === "1-2" ? "2-0" : p.name)));
    expect(await allEntries(after)).toEqual(entries.map((e) => (e.key === changed.key ? changed : e)));
    // Generation 1 is still read as it was written.
    const first = (await fetchTable(`${BASE}/v1/datasets/${root}`, { token: TOKEN, fetch: edgeFetch, generation: 1 }))!;
    expect(first.head.version).toBe(1);
    expect(await allEntries(first)).toEqual(entries);
  }, 60_000);

  it("refuses a directory page another directory page's bytes stand in for", async () => {
    const root = "dirforge";
    const { head } = await seed(root);
    const dirs = head.version === 2 ? head.directories : [];
    const other = await encodeDirectory(root, dirs[1]!.name, (await pagesOf(head)).slice(0, 4));
    await env.BUCKET.put(tableKeys.page(root, dirs[1]!.name), other.gz);
    const edgeFetch: typeof fetch = (url, init) => SELF.fetch(url as string, init);
    await expect(fetchTable(`${BASE}/v1/datasets/${root}`, { token: TOKEN, fetch: edgeFetch })).rejects.toMatchObject({
      code: "ERR_MANIFEST_SIGNATURE",
    });
  }, 60_000);
});
