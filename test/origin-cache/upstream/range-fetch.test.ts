/**
 * One upstream range read over real TLS + HTTP/2 on loopback (the WAN emulator in front of an
 * object server): its bookkeeping does not grow with the chunks of the body.
 */
import { AsyncResource, createHook } from "node:async_hooks";
import { getEventListeners } from "node:events";
import { afterAll, describe, expect, it } from "vitest";
import { Limiter } from "../../../common/limiter.js";
import { Answer } from "../../../origin-cache/upstream/answer.js";
import { UpstreamPools } from "../../../origin-cache/upstream/pool.js";
import { fetchRange, type RangeFetchContext } from "../../../origin-cache/upstream/range-fetch.js";
import { objectBytes, useUpstream } from "../fixtures.js";

const PATH = "/v1/objects/rf.mp4";
const data = objectBytes(4 << 20, "range-fetch");
const up = useUpstream({ [PATH]: data });
let pin = { key: PATH, etag: "", size: data.length };
let pools: UpstreamPools | undefined;
afterAll(async () => pools?.close());

function context(): RangeFetchContext {
  const origin = new URL(up.wan.url).origin;
  pools ??= new UpstreamPools([origin], {
    connections: 1,
    streamsPerConnection: 16,
    headersTimeoutMs: 10_000,
    bodyTimeoutMs: 10_000,
    connectTimeoutMs: 10_000,
    tls: { ca: up.wan.ca },
  });
  return {
    dispatcher: pools.get(origin),
    limiter: new Limiter(4),
    retry: { retries: 0, minDelayMs: 1, maxDelayMs: 1 },
  };
}

/** Promises made by one fetchRange of `[start, end)` (an async hook counts those descended from its scope), and its bytes. */
async function promisesFor(start: number, end: number): Promise<{ made: number; chunks: number; out: Buffer }> {
  const ctx = context();
  const scope = new AsyncResource("fetch");
  const ours = new Set([scope.asyncId()]);
  let made = 0;
  let chunks = 0;
  const hook = createHook({
    init(asyncId, type, trigger) {
      if (!ours.has(trigger)) return;
      ours.add(asyncId);
      if (type === "PROMISE") made++;
    },
  }).enable();
  try {
    const url = new URL(up.signed(PATH));
    const out = await scope.runInAsyncScope(() =>
      fetchRange(ctx, url, pin, start, end, undefined, () => void chunks++),
    );
    return { made, chunks, out };
  } finally {
    hook.disable();
  }
}

describe("fetchRange", () => {
  it("reads a body of many chunks with the promises of one", async () => {
    const probe = await new Answer(context().dispatcher, {
      origin: new URL(up.wan.url).origin,
      path: PATH,
      headers: { range: "bytes=0-0" },
    }).started;
    await probe.read(() => {});
    pin = { ...pin, etag: String(probe.headers.etag) };
    await promisesFor(0, 1024); // the connection and its TLS handshake: not counted below
    const small = await promisesFor(0, 1024);
    const big = await promisesFor(1 << 20, 4 << 20);
    expect(big.out.equals(data.subarray(1 << 20, 4 << 20))).toBe(true);
    expect(small.out.equals(data.subarray(0, 1024))).toBe(true);
    expect(big.chunks).toBeGreaterThan(16);
    expect(big.made).toBe(small.made);
  });

  it("leaves no listener on a long-lived signal once an answer is read", async () => {
    const { dispatcher } = context();
    const outer = new AbortController();
    for (let i = 0; i < 3; i++) {
      const res = await new Answer(
        dispatcher,
        { origin: new URL(up.wan.url).origin, path: PATH, headers: { range: "bytes=0-99" } },
        outer.signal,
      ).started;
      let got = 0;
      await res.read((chunk) => void (got += chunk.length));
      expect(got).toBe(100);
    }
    expect(getEventListeners(outer.signal, "abort")).toHaveLength(0);
  });
});
