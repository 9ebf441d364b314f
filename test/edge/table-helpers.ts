import { env, SELF } from "cloudflare:test";
import { tableRoot } from "../../common/dataset-table/entry.js";
import { TableEntryV1, TableHeadV1, SignedManifestV1, type TablePageRefV1 } from "../../common/schema/index.js";
import { readDirectory } from "../../edge/table/publish.js";
import { pageEntries } from "../../common/dataset-table/page-pins.js";
import { tableKeys } from "../../common/dataset-table/table-keys.js";
import { BASE, TOKEN } from "./helpers.js";

/** Polls until `check` returns a value (the real queue delivers on its own clock). */
export async function eventually<T>(
  check: () => Promise<T | undefined | null>,
  what: string,
  timeoutMs = 30_000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const got = await check();
    if (got !== undefined && got !== null) return got;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function entryOf(key: string): Promise<TableEntryV1 | undefined> {
  const got = await env.BUCKET.get(await tableKeys.entry(tableRoot(key)!, key));
  return got ? TableEntryV1.parse(await got.json()) : undefined;
}

export function tableRequest(prefix: string, tail: string, init: RequestInit = {}): Promise<Response> {
  return SELF.fetch(`${BASE}/v1/datasets/${prefix}/${tail}`, {
    ...init,
    headers: { authorization: `Bearer ${TOKEN}`, ...init.headers },
  });
}

/** A generation's page list: a format-1 head's own, or read from its directory pages in R2. */
export async function pagesOf(head: TableHeadV1): Promise<TablePageRefV1[]> {
  if (head.version === 1) return head.pages;
  return (await Promise.all(head.directories.map((d) => readDirectory(env, head.root, d)))).flat();
}

/** The latest (or a pinned) generation through the edge's routes: head and every page's entries (with their pins). */
export async function readTable(
  prefix: string,
  generation?: number,
): Promise<{ head: TableHeadV1; pages: TablePageRefV1[]; entries: TableEntryV1[] } | undefined> {
  const res = await tableRequest(prefix, `table${generation === undefined ? "" : `?generation=${generation}`}`);
  if (res.status === 404) return undefined;
  const head = TableHeadV1.parse(JSON.parse(SignedManifestV1.parse(await res.json()).payload));
  const entries: TableEntryV1[] = [];
  const pages = await pagesOf(head);
  for (const p of pages) {
    const page = await tableRequest(prefix, `table/pages/${p.name}`);
    const pins = p.pins === undefined ? undefined : await tableRequest(prefix, `table/pins/${p.name}`);
    entries.push(
      ...pageEntries(new Uint8Array(await page.arrayBuffer()), pins && new Uint8Array(await pins.arrayBuffer())),
    );
  }
  return { head, pages, entries };
}
