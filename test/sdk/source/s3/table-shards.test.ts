import { describe, expect, it } from "vitest";
import {
  chunker,
  chunkPageName,
  chunkShard,
  parseShard,
  type TableChunk,
} from "../../../../sdk/source/s3/table-shards.js";

const listing = (n: number, extra: string[] = []) =>
  [...Array.from({ length: n }, (_, i) => `ds/k${String(i).padStart(5, "0")}.mp4`), ...extra]
    .sort()
    .map((key) => ({ key, etag: `"${key.length.toString(16).padStart(32, "0")}"`, size: key.length }));

function chunks(objects: ReturnType<typeof listing>, target: number, pageKeys = 1000): TableChunk[] {
  const cut = chunker("ds", target);
  const out: TableChunk[] = [];
  for (let i = 0; i < objects.length; i += pageKeys) out.push(...cut.push(objects.slice(i, i + pageKeys)));
  return [...out, ...cut.flush()];
}

describe("the chunks a bucket's table is indexed in", () => {
  it("are the same however the listing is paged, and cover it in order", () => {
    const objects = listing(5000);
    const whole = chunks(objects, 100, objects.length);
    const paged = chunks(objects, 100, 7);
    expect(paged.map((c) => c.id)).toEqual(whole.map((c) => c.id));
    expect(whole.flatMap((c) => c.objects.map((o) => o.key))).toEqual(objects.map((o) => o.key));
    // About one cut in `target` keys: 5000 keys in pages of 100 make tens of chunks, not one or thousands.
    expect(whole.length).toBeGreaterThan(20);
    expect(whole.length).toBeLessThan(100);
  });

  it("change only around an object added or removed", () => {
    const before = chunks(listing(5000), 100);
    const after = chunks(listing(5000, ["ds/k02500x.mp4"]), 100);
    const gone = before.filter((c) => !after.some((d) => d.id === c.id));
    const added = after.filter((c) => !before.some((d) => d.id === c.id));
    expect(gone.length).toBe(1);
    expect(added.length).toBeGreaterThanOrEqual(1);
    expect(added.length).toBeLessThanOrEqual(2);
  });

  it("go to one shard each, every shard getting some, and name their pages alike on every machine", () => {
    const all = chunks(listing(5000), 100);
    const owners = all.map((c) => chunkShard(c, 4));
    for (let s = 0; s < 4; s++) expect(owners.filter((o) => o === s).length).toBeGreaterThan(0);
    expect(chunks(listing(5000), 100).map((c) => chunkShard(c, 4))).toEqual(owners);
    expect(chunkPageName(all[0]!, 0)).toMatch(/^0-[0-9]+$/);
    expect(chunkPageName(all[0]!, 0)).toBe(chunkPageName(chunks(listing(5000), 100)[0]!, 0));
    expect(chunkPageName(all[0]!, 1)).not.toBe(chunkPageName(all[0]!, 0));
  });

  it("--shard I/N takes I in [0, N) and N >= 1 only", () => {
    expect(parseShard("0/1")).toEqual({ shard: 0, of: 1 });
    expect(parseShard("3/4")).toEqual({ shard: 3, of: 4 });
    for (const bad of ["4/4", "0/0", "1", "-1/4", "1/-4", "a/b", "1/4/2", " 1/4", "1.0/4"])
      expect(parseShard(bad)).toBeUndefined();
  });
});
