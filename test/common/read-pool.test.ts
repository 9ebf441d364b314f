import { describe, expect, it } from "vitest";
import { ReadPool, releaseRead } from "../../common/read-pool.js";

describe("ReadPool", () => {
  it("serves a read with memory handed back, of exactly the asked length", () => {
    const pool = new ReadPool(1 << 20);
    const a = pool.take(100_000);
    expect(a.length).toBe(100_000);
    releaseRead(a);
    const b = pool.take(120_000);
    expect(b.length).toBe(120_000);
    expect(b.buffer).toBe(a.buffer);
    expect(pool.stats()).toEqual({ allocations: 1, reuses: 1, idleBytes: 0 });
  });

  it("ignores a second release of a view whose memory is lent again, and bytes it never lent", () => {
    const pool = new ReadPool(1 << 20);
    const a = pool.take(1000);
    releaseRead(a);
    const b = pool.take(1000);
    releaseRead(a);
    releaseRead(new Uint8Array(1000));
    releaseRead(b.subarray(0, 10));
    expect(pool.stats().idleBytes).toBe(0);
    // `b` is still lent: the next read gets memory of its own.
    expect(pool.take(1000).buffer).not.toBe(b.buffer);
  });

  it("keeps at most its bound idle and does not pool reads above a quarter of it", () => {
    const pool = new ReadPool(1 << 20);
    const lent = Array.from({ length: 8 }, () => pool.take(200_000));
    for (const b of lent) releaseRead(b);
    // 256 KiB classes: four fit in 1 MiB.
    expect(pool.stats().idleBytes).toBe(1 << 20);
    const big = pool.take(300_000);
    releaseRead(big);
    expect(pool.stats()).toEqual({ allocations: 9, reuses: 0, idleBytes: 1 << 20 });
  });

  it("poisons memory handed back, so a read used after its release shows", () => {
    const pool = new ReadPool(1 << 20, { poison: true });
    const a = pool.take(16);
    a.fill(1);
    releaseRead(a);
    expect([...a]).toEqual(Array(16).fill(0xa5));
  });
});
