import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { keyUnit, pageShards } from "../../common/page-shards.js";

const MiB = 1 << 20;
const keys = (n: number, tag = "") => Array.from({ length: n }, (_, i) => `gameplay/${tag}v${i}.mp4`);

/** The keys that open a shard. */
function openers(ks: readonly string[], sizes: readonly number[], shardBytes: number): Set<string> {
  return new Set(pageShards((i) => ks[i]!, sizes, shardBytes).map((s) => ks[s.first]!));
}

describe("pageShards", () => {
  it("covers every object of the page once, in order, the first opening a shard", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 400 * MiB }), { maxLength: 300 }), (sizes) => {
        const ks = keys(sizes.length);
        const shards = pageShards((i) => ks[i]!, sizes, 128 * MiB, 7);
        let at = 0;
        shards.forEach((s, j) => {
          expect(s).toMatchObject({ id: 7 + j, first: at });
          expect(s.count).toBeGreaterThan(0);
          expect(s.bytes).toBe(sizes.slice(at, at + s.count).reduce((a, b) => a + b, 0));
          at += s.count;
        });
        expect(at).toBe(sizes.length);
      }),
    );
  });

  it("keeps every other cut where it was when an object is inserted: cuts depend on each object alone", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 300 * MiB }), { minLength: 2, maxLength: 200 }),
        fc.nat(),
        fc.integer({ min: 1, max: 300 * MiB }),
        (sizes, at, size) => {
          const ks = keys(sizes.length);
          const i = 1 + (at % (sizes.length - 1));
          const before = openers(ks, sizes, 128 * MiB);
          const ks2 = [...ks.slice(0, i), "gameplay/inserted.mp4", ...ks.slice(i)];
          const after = openers(ks2, [...sizes.slice(0, i), size, ...sizes.slice(i)], 128 * MiB);
          // Only the inserted object and the one after it (which may follow a large one now) can change.
          for (const k of ks) if (k !== ks[i]) expect(after.has(k)).toBe(before.has(k));
        },
      ),
    );
  });

  it("makes shards of about shardBytes on average, a large object a shard of its own", () => {
    const n = 20_000;
    const sizes = Array.from({ length: n }, (_, i) => (i % 500 === 250 ? 300 * MiB : 10 * MiB));
    const ks = keys(n);
    const shards = pageShards((i) => ks[i]!, sizes, 128 * MiB);
    const mean = shards.reduce((a, s) => a + s.bytes, 0) / shards.length;
    expect(mean).toBeGreaterThan(80 * MiB);
    expect(mean).toBeLessThan(180 * MiB);
    for (let i = 250; i < n; i += 500) expect(shards.find((s) => s.first === i)?.count).toBe(1);
  });

  it("hashes keys to [0, 1) spread evenly, nearby keys apart", () => {
    const units = keys(10_000, "x").map(keyUnit);
    for (const u of units) expect(u >= 0 && u < 1).toBe(true);
    const low = units.filter((u) => u < 0.1).length;
    expect(low).toBeGreaterThan(800);
    expect(low).toBeLessThan(1200);
  });

  it("rejects a shardBytes that is not positive", () => {
    expect(() => pageShards(() => "k", [1], 0)).toThrow("Expected a positive shardBytes but received 0");
  });
});
