import { env, SELF } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import { fetchPublicKeys } from "../../common/manifest-client.js";
import { verifiedPayload } from "../../common/manifest-sign.js";
import { SignedUrlsV1, TableHeadV1, type TableEntryV1, type TablePageRefV1 } from "../../common/schema/index.js";
import { mergePages, PAGE_MAX } from "../../common/dataset-table/generation.js";
import { BASE, errorCode } from "./helpers.js";
import { eventually, pagesOf, readTable, tableRequest } from "./table-helpers.js";

const fixtures = inject("mediaFixtures");
const bytesOf = (name: string) => Uint8Array.from(atob(fixtures[name]!.bytes), (c) => c.charCodeAt(0));

describe("the dataset table routes", () => {
  it("enqueues every object of a prefix filled behind the edge's back (what `ec index` calls)", async () => {
    for (const name of ["a.mp4", "b.jpg", "c.npy"]) {
      await env.BUCKET.put(
        `late/${name}`,
        bytesOf({ "a.mp4": "h264-faststart.mp4", "b.jpg": "image.jpg", "c.npy": "array.npy" }[name]!),
      );
    }
    expect((await tableRequest("late", "table")).status).toBe(404);
    const res = await tableRequest("late", "index", { method: "POST" });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ enqueued: 3, cursor: null });
    const table = await eventually(async () => {
      const t = await readTable("late");
      return t?.entries.length === 3 ? t : undefined;
    }, "a generation with all three objects");
    expect(table.entries.map((e) => [e.key, e.kind])).toEqual([
      ["late/a.mp4", "video"],
      ["late/b.jpg", "image"],
      ["late/c.npy", "array"],
    ]);
  });

  it("serves a signed head that verifies with GET /v1/keys, and pages whose digest it names", async () => {
    await env.BUCKET.put("signed/a.mp4", bytesOf("hevc.mp4"));
    await tableRequest("signed", "index", { method: "POST" });
    await eventually(() => readTable("signed"), "the table of signed/");
    const keys = await fetchPublicKeys(BASE, { fetch: (url, init) => SELF.fetch(url as string, init) });
    const head = TableHeadV1.parse(
      JSON.parse(await verifiedPayload(await (await tableRequest("signed", "table")).json(), keys)),
    );
    const sha = async (res: Response) =>
      btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("SHA-256", await res.arrayBuffer()))))
        .replace(/\+/g, "-")
        .replace(/\//g, "_")
        .replace(/=+$/, "");
    // Head format 2: the head names a directory page, which names the page, each by its digest.
    expect(head.version).toBe(2);
    const dir = head.version === 2 ? head.directories[0]! : undefined;
    expect(await sha(await tableRequest("signed", `table/pages/${dir!.name}`))).toBe(dir!.sha256);
    const [ref] = await pagesOf(head);
    expect(await sha(await tableRequest("signed", `table/pages/${ref!.name}`))).toBe(ref!.sha256);
    expect((await tableRequest("signed", "table?generation=999")).status).toBe(404);
    expect(await errorCode(await tableRequest("signed", "table?generation=999"))).toBe("ERR_TABLE_MISSING");
  });

  it("signs URLs for objects of the prefix only, with a bearer token only", async () => {
    const ok = await tableRequest("signed", "urls", {
      method: "POST",
      body: JSON.stringify({ objects: [{ key: "signed/a.mp4", etag: '"e"' }] }),
    });
    const body = SignedUrlsV1.parse(await ok.json());
    expect(body.objects[0]!.indexUrl).toContain("etag=%22e%22");
    expect((await SELF.fetch(body.objects[0]!.url)).status).toBe(200);
    const stray = await tableRequest("signed", "urls", {
      method: "POST",
      body: JSON.stringify({ objects: [{ key: "other/a.mp4", etag: '"e"' }] }),
    });
    expect(stray.status).toBe(400);
    const anonymous = await SELF.fetch(`${BASE}/v1/datasets/signed/urls`, { method: "POST", body: "{}" });
    expect(anonymous.status).toBe(401);
    expect((await SELF.fetch(`${BASE}/v1/datasets/signed/table`)).status).toBe(401);
  });
});

describe("mergePages", () => {
  const entry = (key: string): TableEntryV1 => ({ key, size: 1, etag: '"e"', kind: "other" });
  const store = new Map<string, TableEntryV1[]>();
  const load = async (ref: TablePageRefV1) => store.get(ref.name)!;

  it("rewrites only the pages a change falls into, and splits a page past PAGE_MAX", async () => {
    const keys = Array.from({ length: 2500 }, (_, i) => `m/${String(i).padStart(5, "0")}`);
    const first = await mergePages([], new Map(keys.map((k) => [k, entry(k)])), load, (n) => `1-${n}`);
    for (const w of first.written) store.set(w.ref.name, w.entries);
    expect(first.pages.map((p) => p.count)).toEqual([834, 834, 832]);
    const grow = Array.from({ length: PAGE_MAX }, (_, i) => `m/00001-${String(i).padStart(5, "0")}`);
    const second = await mergePages(
      first.pages,
      new Map([...grow.map((k): [string, TableEntryV1] => [k, entry(k)]), ["m/02499", null]]),
      load,
      (n) => `2-${n}`,
    );
    expect(second.pages[1]!.name).toMatch(/^2-/);
    expect(second.pages.at(-1)!.name).toMatch(/^2-/);
    expect(second.pages.filter((p) => p.name.startsWith("1-")).map((p) => p.name)).toEqual(["1-1"]);
    expect(second.pages.reduce((n, p) => n + p.count, 0)).toBe(2500 + PAGE_MAX - 1);
    expect(Math.max(...second.pages.map((p) => p.count))).toBeLessThanOrEqual(PAGE_MAX);
  });
});
