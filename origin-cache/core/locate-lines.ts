/**
 * A long-polled batched locate: the spans stored now are answered at once, under one lease; the
 * others are pulled soonest first, a few at a time, and each is answered under a lease of its own
 * once stored, so a client reading the window in order waits for its span's answer instead of
 * sending a locate of its own. Every span is answered exactly once; those still unanswered when
 * the deadline passes are answered null together, and a lease granted after that (or after the
 * asker left) ends at once.
 */
import type {
  LocateBatchLine,
  LocateBatchResponse,
  LocateResponse,
  LocateSpan,
} from "../../common/schema/cache-locate.js";
import { mapLimit } from "../../common/limiter.js";
import { CacheError } from "../errors.js";

/** Spans of one batch pulled at once: enough to keep a window's soonest spans coming, few enough that they come first. */
const PULLS = 8;

export interface LocateLinesJob {
  readonly waitMs: number;
  /** True once nobody reads the answer: nothing more is pulled, leases granted then end. */
  readonly gone: () => boolean;
  /** Where the spans stored now lie (null for the rest), under one lease; nothing pulled. */
  readonly stored: (spans: readonly LocateSpan[]) => Promise<LocateBatchResponse>;
  /** Where one span lies once pulled and stored, under a lease of its own. */
  readonly pull: (span: LocateSpan) => Promise<LocateResponse>;
  readonly release: (leaseId: string) => void;
  readonly answer: (line: LocateBatchLine) => void;
}

export async function locateLines(spans: readonly LocateSpan[], job: LocateLinesJob): Promise<void> {
  const now = await job.stored(spans);
  const at = now.spans.flatMap((s, i) => (s ? [i] : []));
  if (at.length > 0)
    job.answer({ at, spans: at.map((i) => now.spans[i]!), ...(now.lease ? { lease: now.lease } : {}) });
  const rest = new Set(now.spans.flatMap((s, i) => (s ? [] : [i])));
  if (rest.size === 0) return;
  let late = false;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      late = true;
      resolve();
    }, job.waitMs);
  });
  const over = (): boolean => late || job.gone();
  const pulls = mapLimit([...rest], PULLS, async (i) => {
    if (over()) return;
    let line: LocateBatchLine;
    try {
      const { lease, ...where } = await job.pull(spans[i]!);
      if (over()) return job.release(lease.id);
      line = { at: [i], spans: [where], lease };
    } catch (err) {
      if (over()) return;
      line = { at: [i], spans: [null], ...(err instanceof CacheError ? { error: err.toJSON().error } : {}) };
    }
    rest.delete(i);
    job.answer(line);
  });
  await Promise.race([pulls, deadline]);
  clearTimeout(timer);
  // Past the deadline (or every pull done): the spans still unanswered, null together.
  late = true;
  if (rest.size > 0 && !job.gone()) job.answer({ at: [...rest], spans: [...rest].map(() => null) });
}
