/**
 * A table page of format 4 decoded a shard at a time: its writer stored where each of its
 * shards (page-shards.ts's page-local rule, at the table's shard target) starts, with each
 * shard's key bytes, keyframes and etag bytes, so that a reader finds the page's shards without
 * hashing a key, and fills the end offsets of an entry's shard (and checks its entries as a
 * page of format 3 is checked whole) only when an entry of it is first read. The order of a
 * window reaches a few dozen shards of each page before its first batch, not every entry.
 */
import { CODECS, type Columns, HAS, HAS_ALL, KINDS, type LazyEnds } from "./entry-columns.js";
import { TablePageFormatError } from "./page-errors.js";

/** What a page's entry must be, as TableEntryV1 would refuse it otherwise; `keyframeStart` is its keyframe list's first offset. */
export function checkEntry(c: Columns, i: number, keyframeStart: number): void {
  const fail = (what: string) => {
    throw new TablePageFormatError(`Expected a valid entry ${i} of the table page but its ${what} is not`);
  };
  const has = c.has[i]!;
  if (has & ~HAS_ALL) fail("field set");
  if (!(has & HAS.keyframes) && c.keyframeEnd[i] !== keyframeStart) fail("keyframe list");
  if (c.kind[i]! >= KINDS.length) fail("kind");
  if (has & HAS.codec && c.codec[i]! >= CODECS.length) fail("codec");
  if ((has & HAS.width && c.width[i] === 0) || (has & HAS.height && c.height[i] === 0)) fail("size in pixels");
  const size = c.size[i]!;
  if (!Number.isSafeInteger(size) || size < 0) fail("size");
}

/** A format-4 page's lengths as stored (what the end offsets are summed from). */
export interface StoredLengths {
  readonly keyLength: Uint32Array;
  readonly keyframeCount: Uint32Array;
  /** Empty where the etags are not text. */
  readonly etagLength: Uint32Array;
}

/**
 * Offsets from a per-shard length: `shards + 1` entries, each the sum of those before, the last
 * `total`; undefined where they do not add up to it.
 */
export function offsetsOf(perShard: Uint32Array, total: number): Uint32Array | undefined {
  const out = new Uint32Array(perShard.length + 1);
  let at = 0;
  for (let s = 0; s < perShard.length; s++) {
    at += perShard[s]!;
    if (at > total) return undefined;
    out[s + 1] = at;
  }
  return at === total ? out : undefined;
}

/**
 * The lazy end offsets of one page's columns: `starts` (shards + 1: each shard's first entry,
 * then the count) and each shard's first key byte, keyframe and etag byte (`keyAt`, `keyframeAt`,
 * `etagAt`, shards + 1 each, the last the block's size).
 *
 * @example
 * const entries = new EntryColumns(columns, errors, undefined, new ShardBlocks(columns, lengths, at, shardBytes));
 */
export class ShardBlocks implements LazyEnds {
  readonly ready: Uint8Array;
  decoded = 0;
  private readonly filled: Uint8Array;
  readonly shardStarts: Uint32Array;

  constructor(
    private readonly columns: Columns,
    private readonly lengths: StoredLengths,
    private readonly at: {
      readonly starts: Uint32Array;
      readonly keyAt: Uint32Array;
      readonly keyframeAt: Uint32Array;
      readonly etagAt: Uint32Array | undefined;
    },
    readonly shardBytes: number,
  ) {
    this.ready = new Uint8Array(columns.size.length);
    this.filled = new Uint8Array(at.starts.length - 1);
    this.shardStarts = at.starts.subarray(0, at.starts.length - 1);
  }

  need(i: number): void {
    // The shard holding i: the last whose first entry is ≤ i.
    const { starts } = this.at;
    let lo = 0;
    let hi = starts.length - 2;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= i) lo = mid;
      else hi = mid - 1;
    }
    this.fill(lo);
  }

  all(): void {
    for (let b = 0; b < this.filled.length; b++) this.fill(b);
  }

  private fill(b: number): void {
    if (this.filled[b] === 1) return;
    const c = this.columns;
    const { keyLength, keyframeCount, etagLength } = this.lengths;
    const { starts, keyAt, keyframeAt, etagAt } = this.at;
    const from = starts[b]!;
    const to = starts[b + 1]!;
    let key = keyAt[b]!;
    let keyframe = keyframeAt[b]!;
    let etag = etagAt ? etagAt[b]! : 0;
    // The entry before the shard ends where the shard starts: its offsets are read as this shard's first starts.
    if (from > 0) {
      c.keyEnd[from - 1] = key;
      c.keyframeEnd[from - 1] = keyframe;
      if (etagAt) c.etagEnd[from - 1] = etag;
    }
    for (let i = from; i < to; i++) {
      const keyframeStart = keyframe;
      c.keyEnd[i] = key += keyLength[i]!;
      c.keyframeEnd[i] = keyframe += keyframeCount[i]!;
      if (etagAt) c.etagEnd[i] = etag += etagLength[i]!;
      checkEntry(c, i, keyframeStart);
    }
    if (key !== keyAt[b + 1] || keyframe !== keyframeAt[b + 1] || (etagAt !== undefined && etag !== etagAt[b + 1]))
      throw new TablePageFormatError(
        `Expected key, etag and keyframe lengths that add up to shard ${b}'s of the table page but they do not`,
      );
    this.ready.fill(1, from, to);
    this.filled[b] = 1;
    this.decoded += to - from;
  }
}
