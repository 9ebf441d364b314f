/**
 * The cache keeps no reference to bytes it has served: once the caller drops a read's result, the
 * memory is collectable. A warm cache serves gigabytes; holding on to them grows the heap without
 * bound and slows every allocation after.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { expect, it } from "vitest";
import { objectBytes, until, useUpstream } from "./fixtures.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const BLOCK = 64 << 10;
const PATH = "/v1/objects/kept.mp4";
const up = useUpstream({ [PATH]: objectBytes(8 * BLOCK, "kept") }, { blockSize: BLOCK });

it("lets go of every read's bytes once the caller drops them (from disk and from a pull)", async () => {
  const { cache } = await up.openCache();
  const refs: WeakRef<ArrayBufferLike>[] = [];
  const readAndDrop = async (offset: number, length: number): Promise<void> => {
    const got = await cache.read(up.signed(PATH), offset, length);
    refs.push(new WeakRef(got.buffer));
  };
  await readAndDrop(10, 1000); // pulled
  await until(() => cache.stats().blocks === 1, "the pulled block on disk");
  // Within one block each, so the result is the block store's own buffer, not a concatenation.
  for (let i = 0; i < 8; i++) await readAndDrop(100 + i * 1000, BLOCK / 2);
  expect(cache.stats().hits).toBeGreaterThanOrEqual(8);
  // A WeakRef's target lives to the end of the job that made it: collect on a later turn.
  await new Promise((r) => setTimeout(r, 10));
  gc();
  await new Promise((r) => setTimeout(r, 10));
  gc();
  expect(refs.filter((r) => r.deref() !== undefined)).toHaveLength(0);
});
