import { createExecutionContext, createMessageBatch, env, getQueueResult } from "cloudflare:test";
import { describe, expect, inject, it, vi } from "vitest";
import { IndexBudgetError, indexCacheKey, MAX_INDEX_READS, objectIndex } from "../../edge/manifest/object-index.js";
import { indexForTable, MESSAGE_OVERHEAD } from "../../edge/table/index-object.js";
import {
  handleQueue,
  INDEX_MAX_RETRIES,
  retryDelay,
  SUBREQUEST_BUDGET,
  type QueueDeps,
} from "../../edge/table/index-queue.js";
import { publishTable } from "../../edge/table/publish.js";
import { tableKeys } from "../../common/dataset-table/table-keys.js";
import { put } from "./helpers.js";
import { entryOf, eventually, readTable } from "./table-helpers.js";

const fixtures = inject("mediaFixtures");
const bytesOf = (name: string) => Uint8Array.from(atob(fixtures[name]!.bytes), (c) => c.charCodeAt(0));

describe("background indexing on the local queue", () => {
  it("indexes a PUT without any reader asking, and publishes it in the table", async () => {
    expect((await put("bgq/a.mp4", bytesOf("h264-faststart.mp4"))).status).toBe(201);
    const entry = await eventually(() => entryOf("bgq/a.mp4"), "the table entry of bgq/a.mp4");
    const head = await env.BUCKET.head("bgq/a.mp4");
    expect(entry).toMatchObject({
      key: "bgq/a.mp4",
      etag: head!.httpEtag,
      kind: "video",
      frames: 30,
      codec: "h264",
      width: 160,
      height: 96,
    });
    expect(await env.BUCKET.head(await indexCacheKey(head!.etag, "bgq/a.mp4"))).not.toBeNull();
    const table = await eventually(async () => {
      const t = await readTable("bgq");
      return t?.entries.some((e) => e.key === "bgq/a.mp4") ? t : undefined;
    }, "a generation listing bgq/a.mp4");
    expect(table.entries.find((e) => e.key === "bgq/a.mp4")).toEqual(entry);
  });
});

/** The same MP4 with a `free` box of `pad` bytes before its trailing moov: past the indexer's 64 KiB head, so it needs several reads. */
function withPaddingBeforeMoov(mp4: Uint8Array, pad: number): Uint8Array {
  const view = new DataView(mp4.buffer, mp4.byteOffset, mp4.byteLength);
  let at = 0;
  while (String.fromCharCode(...mp4.subarray(at + 4, at + 8)) !== "moov") at += view.getUint32(at);
  const free = new Uint8Array(pad);
  new DataView(free.buffer).setUint32(0, pad);
  free.set([0x66, 0x72, 0x65, 0x65], 4);
  const out = new Uint8Array(mp4.length + pad);
  out.set(mp4.subarray(0, at));
  out.set(free, at);
  out.set(mp4.subarray(at), at + pad);
  return out;
}

describe("the index queue's handler (messages as the queue and R2 event notifications deliver them)", () => {
  let seq = 0;
  const batchOf = (bodies: unknown[], attempts = 1) =>
    createMessageBatch(
      "ec-index",
      bodies.map((body) => ({ id: `m${++seq}`, timestamp: new Date(), attempts, body })),
    );
  const r2Event = (key: string, eTag: string, action = "PutObject") => ({
    account: "acct",
    bucket: "ec-data",
    object: { key, size: 1, eTag },
    action,
    eventTime: new Date().toISOString(),
  });
  /** Runs the real handler with the real indexer, noting what each message did. */
  async function deliver(bodies: unknown[], attempts = 1, index: QueueDeps["index"] = indexForTable) {
    const outcomes: string[] = [];
    const batch = batchOf(bodies, attempts);
    const retries = batch.messages.map((m) => vi.spyOn(m, "retry"));
    const ctx = createExecutionContext();
    await handleQueue(batch, env, {
      index: async (e, key, opts) => {
        const done = await index(e, key, opts);
        outcomes.push(done.outcome);
        return done;
      },
    });
    return {
      outcomes,
      result: await getQueueResult(batch, ctx),
      retried: retries.flatMap((r) => r.mock.calls.map((c) => c[0])),
    };
  }

  it("does no work twice for a duplicate or a redelivery of the same (key, etag)", async () => {
    await env.BUCKET.put("dup/a.mp4", bytesOf("h264-faststart.mp4"));
    const head = (await env.BUCKET.head("dup/a.mp4"))!;
    const first = await deliver([{ type: "index", key: "dup/a.mp4" }]);
    expect(first.outcomes).toEqual(["indexed"]);
    const recorded = (await env.BUCKET.head(await tableKeys.entry("dup", "dup/a.mp4")))!;
    const index = (await env.BUCKET.head(await indexCacheKey(head.etag, "dup/a.mp4")))!;
    // The same message again, an R2 notification of the same upload, and a redelivery (attempt 2).
    const again = await deliver([{ type: "index", key: "dup/a.mp4" }, r2Event("dup/a.mp4", head.etag)]);
    const redelivered = await deliver([{ type: "index", key: "dup/a.mp4" }], 2);
    expect([...again.outcomes, ...redelivered.outcomes]).toEqual(["duplicate", "duplicate", "duplicate"]);
    expect(again.result.explicitAcks.length).toBe(2);
    expect((await env.BUCKET.head(await tableKeys.entry("dup", "dup/a.mp4")))!.uploaded).toEqual(recorded.uploaded);
    expect((await env.BUCKET.head(await indexCacheKey(head.etag, "dup/a.mp4")))!.uploaded).toEqual(index.uploaded);
  });

  it("indexes a changed object at its new etag; the old entry is never served for it", async () => {
    await env.BUCKET.put("chg/a.mp4", bytesOf("h264-faststart.mp4"));
    const v1 = (await env.BUCKET.head("chg/a.mp4"))!;
    await deliver([r2Event("chg/a.mp4", v1.etag)]);
    await env.BUCKET.put("chg/a.mp4", bytesOf("other-version.mp4"));
    const v2 = (await env.BUCKET.head("chg/a.mp4"))!;
    // A late redelivery of the old version's notification indexes what is there now.
    const { outcomes } = await deliver([
      r2Event("chg/a.mp4", v1.etag, "CopyObject"),
      r2Event("chg/a.mp4", v2.etag, "CompleteMultipartUpload"),
    ]);
    expect(outcomes).toEqual(["indexed", "duplicate"]);
    expect(await entryOf("chg/a.mp4")).toMatchObject({ etag: v2.httpEtag, frames: 10, width: 128, height: 64 });
    await publishTable(env, "chg");
    const table = await readTable("chg");
    expect(table!.entries.map((e) => [e.key, e.etag])).toEqual([["chg/a.mp4", v2.httpEtag]]);
  });

  it("gives a corrupt object an error entry; the other objects stay in the table", async () => {
    await env.BUCKET.put("bad/bad.mp4", bytesOf("truncated.mp4"));
    await env.BUCKET.put("bad/good.mp4", bytesOf("hevc.mp4"));
    await deliver([r2Event("bad/bad.mp4", "x"), r2Event("bad/good.mp4", "y")]);
    await publishTable(env, "bad");
    const table = await readTable("bad");
    expect(table!.entries.map((e) => e.kind)).toEqual(["error", "video"]);
    expect(table!.entries[0]!.error!.code).toMatch(/^ERR_/);
    expect(table!.entries[1]).toMatchObject({ codec: "hevc", frames: 24 });
  });

  it("retries a failure with backoff; the last attempt records why before the dead-letter queue", async () => {
    await env.BUCKET.put("fail/a.mp4", bytesOf("h264-faststart.mp4"));
    const failing: QueueDeps["index"] = async () => {
      throw new Error("R2 is having a bad day");
    };
    const early = await deliver([{ type: "index", key: "fail/a.mp4" }], 1, failing);
    expect(early.result.retryMessages.length).toBe(1);
    expect(early.retried).toEqual([{ delaySeconds: retryDelay(1) }]);
    expect(await entryOf("fail/a.mp4")).toBeUndefined();
    const last = await deliver([{ type: "index", key: "fail/a.mp4" }], INDEX_MAX_RETRIES + 1, failing);
    expect(last.result.retryMessages.length).toBe(1);
    expect(last.retried).toEqual([{ delaySeconds: retryDelay(INDEX_MAX_RETRIES + 1) }]);
    expect(await entryOf("fail/a.mp4")).toMatchObject({
      kind: "error",
      error: { code: "ERR_INDEX_FAILED", message: expect.stringContaining("R2 is having a bad day") },
    });
    expect(retryDelay(2)).toBeGreaterThan(retryDelay(1));
  });

  it("keeps within the invocation's subrequest budget: what does not fit is retried at once, not cut short", async () => {
    // Each object here needs 600 range reads; the budget (950) holds one, so the rest go to fresh invocations.
    const asked: number[] = [];
    const heavy: QueueDeps["index"] = async (_env, key, { maxReads }) => {
      asked.push(maxReads);
      if (maxReads < 600) throw new IndexBudgetError(key);
      return { outcome: "indexed", root: undefined, reads: 600 };
    };
    const { retried, result } = await deliver(
      [1, 2, 3].map((i) => ({ type: "index", key: `budget/${i}.mp4` })),
      1,
      heavy,
    );
    expect(asked[0]).toBe(MAX_INDEX_READS);
    expect(result.explicitAcks.length).toBe(1);
    expect(retried).toEqual([{ delaySeconds: 0 }, { delaySeconds: 0 }]);
    expect(asked.every((n) => n <= SUBREQUEST_BUDGET - MESSAGE_OVERHEAD)).toBe(true);
    // The real build under a cap too small for it caches nothing: no error record for a good file.
    await env.BUCKET.put("budget/tail.mp4", withPaddingBeforeMoov(bytesOf("h264-bframes-tail.mp4"), 200_000));
    await expect(objectIndex(env, { key: "budget/tail.mp4", maxReads: 1 })).rejects.toBeInstanceOf(IndexBudgetError);
    expect(
      await env.BUCKET.head(await indexCacheKey((await env.BUCKET.head("budget/tail.mp4"))!.etag, "budget/tail.mp4")),
    ).toBeNull();
    expect((await objectIndex(env, { key: "budget/tail.mp4" })).kind).toBe("video");
  });

  it("removes a deleted object from the next generation and ignores ec's own writes", async () => {
    await env.BUCKET.put("del/a.mp4", bytesOf("h264-faststart.mp4"));
    await env.BUCKET.put("del/b.mp4", bytesOf("h264-faststart.mp4"));
    await deliver([r2Event("del/a.mp4", "x"), r2Event("del/b.mp4", "y")]);
    const g1 = (await publishTable(env, "del"))!;
    await env.BUCKET.delete("del/a.mp4");
    const { outcomes } = await deliver([
      r2Event("del/a.mp4", "x", "DeleteObject"),
      r2Event("_ec/table/v1/del/head.json", "z"),
    ]);
    expect(outcomes).toEqual(["removed", "ignored"]);
    const g2 = (await publishTable(env, "del"))!;
    expect(g2.generation).toBe(g1.generation + 1);
    expect((await readTable("del"))!.entries.map((e) => e.key)).toEqual(["del/b.mp4"]);
    // The earlier generation is still there, as a checkpoint of it needs.
    expect((await readTable("del", g1.generation))!.entries.map((e) => e.key)).toEqual(["del/a.mp4", "del/b.mp4"]);
    expect(await publishTable(env, "del")).toBeUndefined();
  });
});
