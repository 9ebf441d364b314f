import { tableRoot } from "../../common/dataset-table/entry.js";
import { IndexMessageV1, R2EventV1, type TableEntryV1 } from "../../common/schema/index.js";
import { IndexBudgetError, MAX_INDEX_READS } from "../manifest/object-index.js";
import { indexForTable, MESSAGE_OVERHEAD, recordEntry, type IndexOutcome } from "./index-object.js";
import { collectTable, MAX_DROPS_PER_RUN, retentionOf } from "./collect.js";
import {
  GENERATION_SUBREQUESTS,
  MIN_GENERATION_SUBREQUESTS,
  publishTable,
  type PublishedGeneration,
} from "./publish.js";
import { countedEnv } from "./r2-count.js";

/** Must equal `max_retries` of the index queue's consumer in wrangler.toml: the last attempt records why. */
export const INDEX_MAX_RETRIES = 4;
/** A Worker invocation's subrequests (1000), less a margin for the publish sends and logging. */
export const SUBREQUEST_BUDGET = 950;

/**
 * What a publish message costs besides its generation: the collector after it (a head read, its
 * record's get and put, and per dropped generation two head reads and two deletes) and the
 * send of the next publish message when more is pending.
 */
export const PUBLISH_OVERHEAD = 3 + 4 * MAX_DROPS_PER_RUN + 1;

/** Seconds before retry n (1-based): 10, 20, 40, 80, … capped at 15 minutes. */
export const retryDelay = (attempts: number) => Math.min(900, 10 * 2 ** (attempts - 1));

/** The object key a queue message names: ec's own message, or an R2 event notification. */
export function messageKey(body: unknown): string | undefined {
  const own = IndexMessageV1.safeParse(body);
  if (own.success) return own.data.type === "index" ? own.data.key : undefined;
  const event = R2EventV1.safeParse(body);
  return event.success ? event.data.object.key : undefined;
}

function publishRoot(body: unknown): string | undefined {
  const own = IndexMessageV1.safeParse(body);
  return own.success && own.data.type === "publish" ? own.data.root : undefined;
}

export interface QueueDeps {
  readonly index: (env: Env, key: string, opts: { maxReads: number }) => Promise<IndexOutcome>;
  /** The invocation's subrequest budget (SUBREQUEST_BUDGET; smaller in tests). */
  readonly budget?: number;
}

function envSeconds(text: string | undefined, fallback: number): number {
  const n = Number(text);
  return text !== undefined && Number.isInteger(n) && n >= 0 ? n : fallback;
}

/**
 * The Worker's `queue()` handler. Index messages (ec's own `{type:"index"}` and R2 event
 * notifications) go one at a time within the invocation's subrequest budget; what does not
 * fit is retried at once into a fresh invocation. A failure retries with backoff; the last
 * attempt writes an error entry saying why before the message goes to the dead-letter queue.
 * Touched roots get one debounced publish message. Publish messages build the next generation.
 *
 * @example
 * export default { fetch: app.fetch, queue: (batch, env) => handleQueue(batch, env) };
 */
export async function handleQueue(
  batch: MessageBatch<unknown>,
  workerEnv: Env,
  deps: QueueDeps = { index: indexForTable },
): Promise<void> {
  const started = Date.now();
  // Every R2 and queue call counted: a publish invocation logs what it made against the limit.
  const counted = countedEnv(workerEnv);
  const env = counted.env;
  const generations: (PublishedGeneration & { root: string })[] = [];
  const roots = new Set<string>();
  const published = new Set<string>();
  const deferred = new Set<string>();
  // One subrequest kept for sending the publish messages deferred to a fresh invocation.
  let budget = (deps.budget ?? SUBREQUEST_BUDGET) - 1;
  for (const msg of batch.messages) {
    const publish = publishRoot(msg.body);
    if (publish !== undefined) {
      // A root published in this invocation already is settled or has its next message sent.
      if (published.has(publish)) {
        msg.ack();
        continue;
      }
      if (budget < PUBLISH_OVERHEAD + MIN_GENERATION_SUBREQUESTS) {
        deferred.add(publish);
        msg.ack();
        continue;
      }
      published.add(publish);
      const done = await publishMessage(env, msg, publish, Math.min(GENERATION_SUBREQUESTS, budget - PUBLISH_OVERHEAD));
      budget -= done.subrequests;
      if (done.published) generations.push({ root: publish, ...done.published });
      continue;
    }
    const key = messageKey(msg.body);
    if (key === undefined) {
      console.error(JSON.stringify({ msg: "index queue: not an index message, dropped", id: msg.id }));
      msg.ack();
      continue;
    }
    if (budget < MESSAGE_OVERHEAD + 16) {
      msg.retry({ delaySeconds: 0 });
      continue;
    }
    try {
      const done = await deps.index(env, key, { maxReads: Math.min(MAX_INDEX_READS, budget - MESSAGE_OVERHEAD) });
      budget -= MESSAGE_OVERHEAD + done.reads;
      if (done.root !== undefined && (done.outcome === "indexed" || done.outcome === "removed")) roots.add(done.root);
      msg.ack();
    } catch (err) {
      if (err instanceof IndexBudgetError) {
        budget = 0;
        msg.retry({ delaySeconds: 0 });
        continue;
      }
      console.error(
        JSON.stringify({
          msg: "index queue: indexing failed",
          key,
          attempts: msg.attempts,
          error: String((err as Error)?.message ?? err),
        }),
      );
      if (msg.attempts > INDEX_MAX_RETRIES) {
        const root = await recordFailure(env, key, err, msg.attempts).catch(() => undefined);
        if (root !== undefined) roots.add(root);
      }
      msg.retry({ delaySeconds: retryDelay(msg.attempts) });
    }
  }
  // Sent as fresh messages rather than retried: a retry counts against max_retries, and one batch
  // may hold more roots than one invocation publishes.
  if (deferred.size > 0)
    await env.PUBLISH_QUEUE.sendBatch(
      [...deferred].map((root) => ({ body: { type: "publish", root } satisfies IndexMessageV1 })),
    );
  const delaySeconds = envSeconds(env.EC_PUBLISH_DELAY_SECONDS, 10);
  for (const root of roots)
    await env.PUBLISH_QUEUE.send({ type: "publish", root } satisfies IndexMessageV1, { delaySeconds });
  if (generations.length > 0)
    console.log(
      JSON.stringify({
        msg: "publish queue: published",
        generations,
        calls: counted.counts,
        subrequests: counted.total(),
        started,
        ended: Date.now(),
      }),
    );
}

/** The error entry of an object that could not be indexed: the table says why, and the dataset still streams. */
async function recordFailure(env: Env, key: string, err: unknown, attempts: number): Promise<string | undefined> {
  const root = tableRoot(key);
  const meta = root === undefined ? null : await env.BUCKET.head(key);
  if (root === undefined || meta === null) return undefined;
  const entry: TableEntryV1 = {
    key,
    size: meta.size,
    etag: meta.httpEtag,
    kind: "error",
    error: {
      code: "ERR_INDEX_FAILED",
      message: `indexing failed after ${attempts} attempts: ${String((err as Error)?.message ?? err).slice(0, 500)}`,
    },
  };
  await recordEntry(env, root, entry);
  return root;
}

/** Old generations go after a publish, by the same single writer; a failure waits for the next publish, never retries this one. */
async function collectAfterPublish(env: Env, root: string): Promise<void> {
  try {
    await collectTable(env, root, retentionOf(env));
  } catch (err) {
    console.error(
      JSON.stringify({
        msg: "publish queue: collecting old generations failed",
        root,
        error: String((err as Error)?.message ?? err),
      }),
    );
  }
}

/** Publishes one generation of `root` within `subrequests`; returns the subrequests it may have made, and the generation. */
async function publishMessage(
  env: Env,
  msg: Message<unknown>,
  root: string,
  subrequests: number,
): Promise<{ subrequests: number; published?: PublishedGeneration }> {
  try {
    const published = await publishTable(env, root, { subrequests });
    // More pending entries than one generation takes: the next generation follows at once, or
    // after the debounce when this one was sparse, so that spread changes gather in their pages.
    if (published?.more)
      await env.PUBLISH_QUEUE.send(
        { type: "publish", root } satisfies IndexMessageV1,
        published.sparse ? { delaySeconds: envSeconds(env.EC_PUBLISH_DELAY_SECONDS, 10) } : {},
      );
    msg.ack();
    if (published) await collectAfterPublish(env, root);
    return { subrequests: (published?.subrequests ?? 1) + PUBLISH_OVERHEAD, ...(published ? { published } : {}) };
  } catch (err) {
    console.error(
      JSON.stringify({
        msg: "publish queue: publishing failed",
        root,
        attempts: msg.attempts,
        error: String((err as Error)?.message ?? err),
      }),
    );
    msg.retry({ delaySeconds: retryDelay(msg.attempts) });
    return { subrequests: subrequests + PUBLISH_OVERHEAD };
  }
}
