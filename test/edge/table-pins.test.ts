import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { gzip } from "../../common/dataset-table/digest.js";
import { encodePins } from "../../common/dataset-table/page-pins.js";
import { tableKeys } from "../../common/dataset-table/table-keys.js";
import type { TableEntryV1 } from "../../common/schema/index.js";
import { allEntries, fetchTable } from "../../common/table-client.js";
import { writeGeneration } from "../../edge/table/publish.js";
import { syntheticEntry } from "../../bench/synthetic-table.js";
import { BASE, TOKEN } from "./helpers.js";
import { pagesOf } from "./table-helpers.js";

/** An entry as open-scale seeds them, its etag an MD5 (R2's single-part ETag): random bytes to gzip. */
async function entry(root: string, i: number): Promise<TableEntryV1> {
  const md5 = new Uint8Array(await crypto.subtle.digest("MD5", new TextEncoder().encode(`${root}${i}`)));
  const etag = `"${Array.from(md5, (b) => b.toString(16).padStart(2, "0")).join("")}"`;
  return { ...syntheticEntry(`${root}/o-${String(i).padStart(6, "0")}.mp4`, i), etag };
}

async function seed(root: string, n: number, pageTarget: number) {
  const entries = await Promise.all(Array.from({ length: n }, (_, i) => entry(root, i)));
  const head = await writeGeneration(env, root, undefined, new Map(entries.map((e) => [e.key, e])), 1000, pageTarget);
  return { entries, head, pages: await pagesOf(head) };
}

/** The client's requests to the pins and pages routes. */
function counting() {
  const seen = { pins: 0, pages: 0 };
  const fetch: typeof globalThis.fetch = (url, init) => {
    const u = String(url);
    if (u.includes("/table/pins")) seen.pins++;
    else if (u.includes("/table/pages")) seen.pages++;
    return SELF.fetch(u, init);
  };
  return { seen, fetch };
}

describe("a table page's pins (its etags), kept apart from the planning columns", () => {
  it("are not read at open: the pages of 1000 objects cost under 6 B each, not 19.8", async () => {
    const { entries, pages } = await seed("pinsa", 1000, 1000);
    expect(pages[0]!.pins).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const stored = await env.BUCKET.get(tableKeys.page("pinsa", pages[0]!.name));
    expect(stored!.size / entries.length).toBeLessThan(6);
    const { seen, fetch } = counting();
    const table = (await fetchTable(`${BASE}/v1/datasets/pinsa`, { token: TOKEN, fetch }))!;
    expect(seen.pins).toBe(0);
    expect(table.pins!.fetched).toBe(0);
    expect(table.entries.key(0)).toBe(entries[0]!.key);
    expect(() => table.entries.etag(0)).toThrow(expect.objectContaining({ code: "ERR_TABLE_PINS_NOT_READY" }));
    // An object made from the listing before its pins came: its etag is read when asked for.
    const object = table.entries.at(999)!;
    await table.entries.pinsReady(999);
    expect(object.etag).toBe(entries[999]!.etag);
    expect(seen.pins).toBe(1);
  });

  it("are fetched once per page, only for the pages whose objects are read", async () => {
    const { entries } = await seed("pinsb", 60, 10);
    const { seen, fetch } = counting();
    const table = (await fetchTable(`${BASE}/v1/datasets/pinsb`, { token: TOKEN, fetch }))!;
    expect(table.pages).toHaveLength(6);
    await Promise.all([15, 12, 19, 41].map((i) => table.entries.keyPinned(entries[i]!.key)));
    expect(seen.pins).toBe(2);
    for (const i of [12, 15, 19, 41]) expect(table.entries.etag(i)).toBe(entries[i]!.etag);
    expect(() => table.entries.etag(0)).toThrow(expect.objectContaining({ code: "ERR_TABLE_PINS_NOT_READY" }));
    await table.entries.pinsReady(10);
    expect(seen.pins).toBe(2);
    // The whole table, for tools: the other four pages in one framed request.
    expect(await allEntries(table)).toEqual(entries);
    expect(seen.pins).toBe(3);
  });

  it("refuses forged pins with ERR_MANIFEST_SIGNATURE, as a forged page, and never answers their etags", async () => {
    const { entries, pages } = await seed("pinsc", 20, 10);
    const forged = entries.slice(10).map((e, i) => (i === 3 ? '"00000000000000000000000000000000"' : e.etag));
    await env.BUCKET.put(tableKeys.pins("pinsc", pages[1]!.name), await gzip(encodePins(forged)), {
      httpMetadata: { contentEncoding: "gzip" },
    });
    const table = (await fetchTable(`${BASE}/v1/datasets/pinsc`, { token: TOKEN, fetch: SELF.fetch.bind(SELF) }))!;
    await expect(table.entries.pinsReady(13)).rejects.toMatchObject({ code: "ERR_MANIFEST_SIGNATURE" });
    expect(() => table.entries.etag(13)).toThrow(expect.objectContaining({ code: "ERR_TABLE_PINS_NOT_READY" }));
    // The page whose pins are its own still reads.
    await table.entries.pinsReady(3);
    expect(table.entries.etag(3)).toBe(entries[3]!.etag);
  });
});
