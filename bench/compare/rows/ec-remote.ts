/**
 * ec through the WAN emulator via the origin-cache process: "cold" starts with an empty cache,
 * "warm" reads the same clips again with the cache filled. The cache's CPU and memory count.
 */
import { join } from "node:path";
import type { RowName } from "../args.js";
import { ecOptions, ROW_TIMEOUT_MS, type RowContext, type RowDef, type RowOutcome } from "../row.js";
import { runChild } from "../run-child.js";

/** Why a row that reads through the origin-cache cannot run now, or undefined when it can. */
export function cacheMissing(ctx: RowContext): string | undefined {
  if (!ctx.testbed) return "the local edge did not start (see the message above)";
  if (ctx.cache) return undefined;
  // The ec_cold row starts the cache and fills it; the rows after it read it warm.
  return ctx.config.rows.includes("ec_cold")
    ? "the origin-cache process did not start (see the message above)"
    : "it reads the cache ec_cold fills: add ec_cold to --rows";
}

/**
 * Runs a row child that streams the bench dataset through the WAN and the origin-cache process:
 * `command script ARGS_JSON` with the ec rows' options, on the client CPUs, the cache's CPU and
 * memory counted in the row. The TypeScript rows and the Python client's share it.
 */
export async function runThroughCache(
  ctx: RowContext,
  command: string,
  script: string,
  env: Readonly<Record<string, string>> = {},
  dataset: { readonly url?: string; readonly limit?: number } = {},
): Promise<RowOutcome> {
  const { testbed: bed, cache } = ctx;
  if (!bed || !cache) return { kind: "skipped", reason: cacheMissing(ctx)! };
  const args = {
    url: dataset.url ?? bed.datasetUrl,
    options: {
      ...ecOptions(ctx.config),
      ...(dataset.limit === undefined ? {} : { limit: dataset.limit }),
      cache: cache.url,
      token: bed.edge.token,
    },
    stepMs: ctx.config.stepMs,
  };
  const before = await cacheCounters(cache.url);
  const m = await runChild({
    command,
    args: [script, JSON.stringify(args)],
    env: { NODE_EXTRA_CA_CERTS: bed.caFile, ...env },
    alsoPids: [cache.pid],
    wanBytes: () => bed.wan.stats.bytesSent,
    wanRequests: () => bed.wan.stats.requests,
    timeoutMs: ROW_TIMEOUT_MS,
    cpus: ctx.config.cpus,
  });
  const after = await cacheCounters(cache.url);
  const during = (k: "locates" | "syncs") => {
    const a = before[k];
    const b = after[k];
    return a === undefined || b === undefined ? undefined : b - a;
  };
  const locates = during("locates");
  const syncs = during("syncs");
  return {
    kind: "ran",
    ...m,
    ...(locates === undefined ? {} : { cacheLocates: locates }),
    ...(syncs === undefined ? {} : { cacheSyncs: syncs }),
  };
}

/** The origin-cache's locates answered and store syncs (its /v1/stats); a count it lacks is undefined. */
async function cacheCounters(url: string): Promise<{ locates?: number; syncs?: number }> {
  try {
    const res = await fetch(`${url}/v1/stats`);
    const { locates, syncs } = (await res.json()) as { locates?: unknown; syncs?: unknown };
    return {
      ...(typeof locates === "number" ? { locates } : {}),
      ...(typeof syncs === "number" ? { syncs } : {}),
    };
  } catch {
    return {};
  }
}

/** One TypeScript consumer run through the origin-cache (the ec cold and warm rows, and the Python row's pairs). */
export async function runEc(ctx: RowContext): Promise<RowOutcome> {
  try {
    return await runThroughCache(ctx, process.execPath, join(ctx.childDir, "ec-stream.js"));
  } catch (err) {
    const text = (err as Error).message;
    if (text.includes("ERR_SOURCE_UNSUPPORTED"))
      return {
        kind: "skipped",
        reason: "this SDK build opens no https:// edge dataset URLs yet (ERR_SOURCE_UNSUPPORTED)",
      };
    throw err;
  }
}

/**
 * Streams `clips` clips of the warm-up copy of the videos through the origin-cache, unmeasured,
 * so the ec rows meet a cache process that has served traffic before, as a deployed one has.
 */
export async function warmCache(ctx: RowContext, clips: number): Promise<void> {
  const url = ctx.testbed?.warmupUrl;
  if (clips === 0 || url === undefined) return;
  await runThroughCache(ctx, process.execPath, join(ctx.childDir, "ec-stream.js"), {}, { url, limit: clips });
}

const ecRow = (name: RowName, label: string): RowDef => ({ name, label, run: runEc });

export const ecColdRow = ecRow("ec_cold", "ec cold (WAN, empty cache)");
export const ecWarmRow = ecRow("ec_warm", "ec warm (cache filled)");
