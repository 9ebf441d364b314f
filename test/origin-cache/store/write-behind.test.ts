import { AsyncResource, createHook } from "node:async_hooks";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../../origin-cache/log.js";
import { CacheMetrics } from "../../../origin-cache/metrics.js";
import { blockKey } from "../../../origin-cache/store/block-id.js";
import { BlockStore } from "../../../origin-cache/store/block-store.js";
import { WriteBehind } from "../../../origin-cache/store/write-behind.js";
import { objectBytes, tempDir } from "../fixtures.js";

const BLOCK = 16 << 10;
const id = (index: number) => ({ key: "/v1/objects/w.mp4", etag: '"w"', index });
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function landing(): Promise<{ store: BlockStore; behind: WriteBehind }> {
  const dir = await tempDir();
  const store = await BlockStore.open({ dir: dir.path, maxBytes: 64 * (BLOCK + 4096), blockSize: BLOCK });
  cleanups.push(dir.remove, () => store.close());
  const metrics = new CacheMetrics({ inFlight: () => 0, resident: () => store.residentBytes });
  return { store, behind: new WriteBehind(() => store, metrics, createLogger("silent")) };
}

/**
 * Promises made while one pull of `blocks` blocks lands and is written: an async hook counts the
 * promises descended from the pull's own async scope (not the test runner's meanwhile).
 */
async function promisesFor(behind: WriteBehind, first: number, blocks: number): Promise<number> {
  const scope = new AsyncResource("pull");
  const ours = new Set([scope.asyncId()]);
  let made = 0;
  const hook = createHook({
    init(asyncId, type, trigger) {
      if (!ours.has(trigger)) return;
      ours.add(asyncId);
      if (type === "PROMISE") made++;
    },
  }).enable();
  try {
    await scope.runInAsyncScope(() => {
      const run = behind.run();
      for (let i = first; i < first + blocks; i++) run.land(id(i), blockKey(id(i)), objectBytes(BLOCK, `b${i}`));
      run.end();
      return behind.settled();
    });
  } finally {
    hook.disable();
  }
  return made;
}

describe("WriteBehind", () => {
  it("serves landed blocks from memory and stores a pull's blocks together", async () => {
    const { store, behind } = await landing();
    const run = behind.run();
    const data = objectBytes(BLOCK, "mem");
    run.land(id(0), blockKey(id(0)), data);
    expect(behind.get(blockKey(id(0)))).toBe(data);
    run.end();
    await behind.settled();
    expect(behind.get(blockKey(id(0)))).toBeUndefined();
    expect(store.has(id(0))).toBe(true);
    expect(store.slabWrites).toBe(1);
  });

  it("writes a pull with a promise per slab write, not per block", async () => {
    const { store, behind } = await landing();
    await promisesFor(behind, 100, 2); // the first write opens the slab: not counted below
    const one = await promisesFor(behind, 0, 1);
    const twelve = await promisesFor(behind, 1, 12);
    expect(store.blocks).toBe(15);
    // Twelve adjacent slots make one slab write, as one block does: the same bookkeeping.
    expect(twelve).toBe(one);
  });
});
