import { describe, expect, it } from "vitest";
import { get, pattern, put } from "./helpers.js";

describe("concurrent PUT and GET", { timeout: 60_000 }, () => {
  it("parallel uploads of distinct keys all land intact", async () => {
    const bodies = Array.from({ length: 10 }, (_, i) => pattern(20_000 + i * 997, i + 1));
    // Each response is read inside its own promise: workerd holds a connection slot until it is.
    const puts = await Promise.all(
      bodies.map(async (b, i) => {
        const res = await put(`conc/many-${i}.bin`, b);
        await res.arrayBuffer();
        return res.status;
      }),
    );
    expect(puts).toEqual(bodies.map(() => 201));
    const gets = await Promise.all(
      bodies.map(async (_, i) => {
        const res = await get(`conc/many-${i}.bin`, { range: "bytes=1000-" });
        return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()) };
      }),
    );
    for (const [i, res] of gets.entries()) {
      expect(res.status).toBe(206);
      expect(res.bytes).toEqual(bodies[i]!.slice(1000));
    }
  });

  it("readers racing overwrites always get one whole version, matching its ETag", async () => {
    const versions = [pattern(60_000, 101), pattern(60_000, 202)];
    const first = (await (await put("conc/hot.bin", versions[0]!)).json()) as { etag: string };
    const etags = new Map<string, Uint8Array>([[first.etag, versions[0]!]]);
    const writers = Array.from({ length: 4 }, async (_, i) => {
      const res = await put("conc/hot.bin", versions[i % 2]!);
      etags.set(((await res.json()) as { etag: string }).etag, versions[i % 2]!);
    });
    const readers = Array.from({ length: 10 }, async () => {
      const res = await get("conc/hot.bin", { range: "bytes=0-49999" });
      return { etag: res.headers.get("etag")!, status: res.status, bytes: new Uint8Array(await res.arrayBuffer()) };
    });
    const [, reads] = await Promise.all([Promise.all(writers), Promise.all(readers)]);
    for (const read of reads) {
      expect(read.status).toBe(206);
      expect(etags.has(read.etag)).toBe(true);
      expect(read.bytes).toEqual(etags.get(read.etag)!.slice(0, 50_000));
    }
  });
});
