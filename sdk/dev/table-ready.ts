/**
 * Waiting for a dataset's table at a local edge: after a push, the edge's queue indexes each
 * object and then publishes a table generation (after a debounce, EC_PUBLISH_DELAY_SECONDS).
 * Until then `open()` plans from every object's index and says so (ERR_TABLE_MISSING); `ec demo`
 * waits here instead, so a first run plans from the table as a deployed dataset would.
 */
import { sameWeak } from "../../common/entity-tags.js";
import { fetchTable } from "../../common/table-client.js";
import { inflatePage, pageDigest } from "../source/page-check.js";

/** A published generation that holds every object asked for. */
export interface TableReady {
  readonly generation: number;
  /** Objects the generation lists under the dataset's prefix. */
  readonly objects: number;
  /** Seconds waited for it. */
  readonly seconds: number;
}

export interface TableWaitOptions {
  readonly token: string;
  /** Give up after this long; default 60 s. */
  readonly timeoutMs?: number;
  /** Time between looks; default 500 ms. */
  readonly everyMs?: number;
}

/** Whether `table` lists every one of `objects` at its etag. */
async function holds(
  table: NonNullable<Awaited<ReturnType<typeof fetchTable>>>,
  objects: readonly { key: string; etag: string }[],
): Promise<boolean> {
  for (const o of objects) {
    const i = table.entries.indexOf(o.key);
    if (i === undefined) return false;
    await table.entries.pinsReady(i);
    if (!sameWeak(table.entries.etag(i), o.etag)) return false;
  }
  return true;
}

/**
 * Resolves with the first published table generation of `datasetUrl` that lists every one of
 * `objects` at its etag; undefined when none does within the timeout.
 *
 * @example
 * const ready = await waitForTable(`${edge.url}/v1/datasets/demo`, pushed.pushed, { token: edge.token });
 */
export async function waitForTable(
  datasetUrl: string,
  objects: readonly { key: string; etag: string }[],
  opts: TableWaitOptions,
): Promise<TableReady | undefined> {
  const started = performance.now();
  const deadline = started + (opts.timeoutMs ?? 60_000);
  for (;;) {
    const table = await fetchTable(datasetUrl, { token: opts.token, inflate: inflatePage, digest: pageDigest });
    if (table && (await holds(table, objects)))
      return {
        generation: table.head.generation,
        objects: table.entries.length,
        seconds: (performance.now() - started) / 1000,
      };
    if (performance.now() >= deadline) return undefined;
    await new Promise((r) => setTimeout(r, opts.everyMs ?? 500));
  }
}
