import { generateKeyPairSync } from "node:crypto";
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { buildGeneration } from "../../common/dataset-table/generation.js";
import { LazyTable } from "../../common/lazy-table.js";
import { manifestSigner, publicKeys, signJson } from "../../common/manifest-sign.js";
import type { TableEntryV1, TableHeadV1 } from "../../common/schema/index.js";
import type { TableStore } from "../../common/table-client.js";
import { lazyOpen } from "../../sdk/lazy-open.js";
import { PageWait } from "../../sdk/sampler/paged-plan.js";
import { PAGE_WINDOW, pagedStream } from "../../sdk/sampler/shuffle.js";

/** 240 objects of 60 frames (keyframes every 10) under d/, in pages of 2: 120 pages. */
const entries: TableEntryV1[] = Array.from({ length: 240 }, (_, i) => ({
  key: `d/v${String(i).padStart(4, "0")}.mp4`,
  size: 50_000 + 7919 * i,
  etag: `"e${i}"`,
  kind: "video",
  frames: 60,
  keyframes: [0, 10, 20, 30, 40, 50],
}));

/** A signed generation of `entries` in directory pages of 16 pages (8 of them), in a store that logs the directory pages asked. */
async function seeded(o: { pageTarget: number; directoryTarget: number } = { pageTarget: 2, directoryTarget: 16 }) {
  const signer = await manifestSigner(
    generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64"),
  );
  const { head, pages } = await buildGeneration(undefined, new Map(entries.map((e) => [e.key, e])), async () => [], {
    root: "d",
    shardBytes: 120_000,
    now: 0,
    pageTarget: o.pageTarget,
    directoryTarget: o.directoryTarget,
    pinsApart: true,
  });
  const bodies = new Map(pages.map((p) => [p.name, new Uint8Array(gunzipSync(p.gz))]));
  const pins = new Map(pages.flatMap((p) => (p.pins ? [[p.name, new Uint8Array(gunzipSync(p.pins))] as const] : [])));
  const directories = new Set(head.directories.map((d) => d.name));
  const asked: string[] = [];
  const signed = await signJson(head satisfies TableHeadV1, signer);
  const store: TableStore = {
    head: async () => signed,
    page: async (name) => (directories.has(name) && asked.push(name), bodies.get(name)!),
    pins: async (name) => pins.get(name)!,
  };
  return { store, keys: Promise.resolve(publicKeys([signer])), asked, directories };
}

describe("the directory pages a lazy open's first clip reads", () => {
  it("are one or two of the table's, whatever the seed: the first windows lie among neighbouring pages", async () => {
    for (let seed = 0; seed < 12; seed++) {
      const { store, keys, asked, directories } = await seeded();
      expect(directories.size).toBe(8);
      const table = (await LazyTable.open(store, keys, "d"))!;
      expect(table.pageCount).toBe(120);
      // The root's dataset: open reads the head only.
      expect(asked).toEqual([]);
      const { paged } = lazyOpen(table, { frames: 4, stride: 1, align: "keyframe" }, () => undefined);
      const it = pagedStream(paged, "shard-buffer", { seed, epoch: 1, buffer: 16 })![Symbol.iterator]();
      let next = it.next();
      while (next.value instanceof PageWait) {
        await next.value.until;
        next = it.next();
      }
      expect(next.done).toBe(false);
      // A window read, and the next one fetched ahead (its directory page too), not read.
      for (let i = 0; i < 8; i++) await new Promise((r) => setImmediate(r));
      expect(paged.asked.length).toBe(PAGE_WINDOW);
      expect(paged.prefetched.length).toBe(PAGE_WINDOW);
      expect(table.read.length).toBe(PAGE_WINDOW);
      expect(table.prefetchedPages.length).toBe(PAGE_WINDOW);
      expect(new Set(asked).size).toBeLessThanOrEqual(2);
    }
  });
});

describe("the table pages a lazy open's first clip decodes", () => {
  it("are decoded a shard at a time: the entries of the shards the order reaches, not every entry of the window", async () => {
    // Pages of 20 (12 of them), about 4 shards a page at 120 kB.
    const { store, keys } = await seeded({ pageTarget: 20, directoryTarget: 16 });
    const table = (await LazyTable.open(store, keys, "d"))!;
    expect(table.pageCount).toBe(12);
    const { paged } = lazyOpen(table, { frames: 4, stride: 1, align: "keyframe" }, () => undefined);
    const it = pagedStream(paged, "shard-buffer", { seed: 5, epoch: 0, buffer: 4 })![Symbol.iterator]();
    let next = it.next();
    while (next.value instanceof PageWait) {
      await next.value.until;
      next = it.next();
    }
    expect(next.done).toBe(false);
    const read = await Promise.all(paged.asked.map(async (k) => (await table.page(k)).entries));
    expect(read.length).toBe(PAGE_WINDOW);
    // Each page's shards as its writer stored them, its etags from its pins: a shard decoded when first read.
    expect(read.every((e) => e.apart && e.shardStarts(120_000) !== undefined)).toBe(true);
    const decoded = read.reduce((n, e) => n + e.decoded, 0);
    expect(decoded).toBeGreaterThan(0);
    expect(decoded).toBeLessThan(read.reduce((n, e) => n + e.length, 0) / 2);
  });
});
