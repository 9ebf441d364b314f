/**
 * Pull buffers come from a pool and go back to it once the store has written their blocks, so a
 * cold stream allocates no buffer per pull; every reader that keeps bytes keeps a copy, so a
 * buffer lent again never changes what an earlier read or stream returned. On a real loopback upstream
 * (HTTP/1.1 object server behind the TLS + HTTP/2 WAN emulator).
 */
import { afterEach, expect, it, vi } from "vitest";
import { ReadPool } from "../../common/read-pool.js";
import { objectBytes, until, useUpstream } from "./fixtures.js";

const BLOCK = 16 << 10;
const PATH = "/v1/objects/pooled.mp4";
const data = objectBytes(64 * BLOCK, "pooled");
const up = useUpstream({ [PATH]: data }, { blockSize: BLOCK });
const url = (): string => up.signed(PATH);

afterEach(() => {
  vi.restoreAllMocks();
});

it("lends one buffer to pull after pull once each pull's blocks are written", async () => {
  const { cache } = await up.openCache();
  const into = Buffer.alloc(4 * BLOCK);
  await cache.read(url(), 0, 4 * BLOCK, { into });
  await until(() => cache.stats().blocks === 4, "the first pull's blocks on disk");
  const slow = vi.spyOn(Buffer, "allocUnsafeSlow");
  const unsafe = vi.spyOn(Buffer, "allocUnsafe");
  const given = vi.spyOn(ReadPool.prototype, "give");
  // Ten more cold pulls of four blocks, one after another as the cold path makes them.
  for (let p = 1; p <= 10; p++) {
    await cache.read(url(), p * 4 * BLOCK, 4 * BLOCK, { into });
    expect(into.equals(data.subarray(p * 4 * BLOCK, (p + 1) * 4 * BLOCK))).toBe(true);
    await until(() => cache.stats().blocks === 4 * (p + 1), `pull ${p}'s blocks on disk`);
    await until(() => given.mock.calls.length === p, `pull ${p}'s buffer given back`);
  }
  expect(cache.stats().misses).toBeGreaterThanOrEqual(40);
  // No pull made a buffer of its size: each took the one the pull before it gave back.
  const pullSized = ([size]: unknown[]) => typeof size === "number" && size >= 4 * BLOCK;
  expect(slow.mock.calls.filter(pullSized)).toEqual([]);
  expect(unsafe.mock.calls.filter(pullSized)).toEqual([]);
  await cache.close();
});

it("never changes the bytes a stream yielded when its pull's buffer serves the next pulls", async () => {
  const { cache } = await up.openCache();
  const kept: Uint8Array[] = [];
  // A stream yields each block's part as it lands (the /v1/fetch route writes them out as they come).
  for (let b = 0; b < 12; b++) {
    for await (const part of cache.stream(url(), b * BLOCK + 100, 1000)) kept.push(part);
    await until(() => cache.stats().blocks === b + 1, `block ${b} on disk`);
  }
  expect(kept).toHaveLength(12);
  // Later pulls wrote other bytes into the buffers the earlier ones had: no yielded part moved.
  kept.forEach((got, b) =>
    expect(Buffer.from(got).equals(data.subarray(b * BLOCK + 100, b * BLOCK + 1100))).toBe(true),
  );
  await cache.close();
});
