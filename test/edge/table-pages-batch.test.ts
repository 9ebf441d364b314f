import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { gunzip } from "../../common/dataset-table/digest.js";
import { MAX_PAGES_PER_REQUEST, splitFrames } from "../../common/dataset-table/page-frames.js";
import type { TableEntryV1, TableHeadV1, TablePageRefV1 } from "../../common/schema/index.js";
import { allEntries, fetchTable } from "../../common/table-client.js";
import { writeGeneration } from "../../edge/table/publish.js";
import { BASE, TOKEN } from "./helpers.js";
import { pagesOf, tableRequest } from "./table-helpers.js";

const ROOT = "batch";
const URL_OF = `${BASE}/v1/datasets/${ROOT}`;

/** A table of 150 objects in 75 pages of 2: more pages than one request may name. */
async function seed(): Promise<{ head: TableHeadV1; pages: TablePageRefV1[]; entries: TableEntryV1[] }> {
  const entries: TableEntryV1[] = Array.from({ length: 150 }, (_, i) => ({
    key: `${ROOT}/${String(i).padStart(4, "0")}.bin`,
    size: 100 + i,
    etag: `"${i.toString(16).padStart(32, "0")}"`,
    kind: "other",
  }));
  const head = await writeGeneration(env, ROOT, undefined, new Map(entries.map((e) => [e.key, e])), 1000, 2);
  return { head, pages: await pagesOf(head), entries };
}

/** Every request the client makes, through the edge, counted by route. */
function counting(rewrite: (url: string) => string = (u) => u) {
  const seen = { pages: 0, page: 0 };
  const fetch: typeof globalThis.fetch = (url, init) => {
    const u = String(url);
    if (u.includes("/table/pages?")) seen.pages++;
    else if (u.includes("/table/pages/")) seen.page++;
    return SELF.fetch(rewrite(u), init);
  };
  return { seen, fetch };
}

describe("several table pages in one response", () => {
  it("answers each named page as its own route stores it, in the order asked", async () => {
    const { pages } = await seed();
    expect(pages.length).toBe(75);
    const names = [pages[3]!.name, pages[0]!.name, pages[74]!.name];
    const res = await tableRequest(ROOT, `table/pages?names=${names.join(",")}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    const frames = splitFrames(new Uint8Array(await res.arrayBuffer()), 3);
    for (const [k, name] of names.entries()) {
      const one = new Uint8Array(await (await tableRequest(ROOT, `table/pages/${name}`)).arrayBuffer());
      expect(await gunzip(frames[k]!)).toEqual(one);
    }
  });

  it("refuses more than 64 names, a bad name, a missing page and a request without a token", async () => {
    const { pages } = await seed();
    const code = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code;
    const many = pages.slice(0, MAX_PAGES_PER_REQUEST + 1).map((p) => p.name);
    const tooMany = await tableRequest(ROOT, `table/pages?names=${many.join(",")}`);
    expect(tooMany.status).toBe(400);
    expect(await code(tooMany)).toBe("ERR_BAD_REQUEST");
    for (const names of ["", "1-0,,1-1", "1-0,../x", "1-0,1-x"]) {
      const bad = await tableRequest(ROOT, `table/pages?names=${encodeURIComponent(names)}`);
      expect(bad.status, names).toBe(400);
    }
    expect((await tableRequest(ROOT, "table/pages")).status).toBe(400);
    const missing = await tableRequest(ROOT, `table/pages?names=${pages[0]!.name},999-0`);
    expect(missing.status).toBe(404);
    expect(await code(missing)).toBe("ERR_NOT_FOUND");
    expect((await SELF.fetch(`${URL_OF}/table/pages?names=${pages[0]!.name}`)).status).toBe(401);
  });

  it("lets a client read 75 pages in 2 requests, each page still checked against the signed head", async () => {
    const { entries } = await seed();
    const { seen, fetch } = counting();
    const table = (await fetchTable(URL_OF, { token: TOKEN, fetch }))!;
    expect(seen).toEqual({ pages: 2, page: 1 });
    expect(table.requests).toBe(1 + 1 + 1 + 2); // keys, head, its directory page, two batches
    expect(await allEntries(table)).toEqual(entries);
    // The same bytes under other names (two pages swapped) fail the digest of the page asked for.
    const swapped = counting((u) => {
      if (!u.includes("/table/pages?")) return u;
      const q = new URL(u);
      const names = q.searchParams.get("names")!.split(",");
      [names[0], names[1]] = [names[1]!, names[0]!];
      q.searchParams.set("names", names.join(","));
      return q.toString();
    });
    await expect(fetchTable(URL_OF, { token: TOKEN, fetch: swapped.fetch })).rejects.toMatchObject({
      code: "ERR_MANIFEST_SIGNATURE",
    });
  });

  it("falls back to one page a request where the edge has no such route", async () => {
    const { entries } = await seed();
    const { seen, fetch } = counting((u) => (u.includes("/table/pages?") ? `${BASE}/v1/no-such-route` : u));
    const table = (await fetchTable(URL_OF, { token: TOKEN, fetch }))!;
    expect(seen.pages).toBe(2); // both batches were in flight before the first 404 came
    expect(seen.page).toBe(1 + 75);
    expect(table.requests).toBe(1 + 1 + 1 + 2 + 75);
    expect(await allEntries(table)).toEqual(entries);
  });
});
