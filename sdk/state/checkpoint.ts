/**
 * Exact resume. A checkpoint names the epoch order (dataset fingerprint + seed + epoch) and the
 * set of positions of that order already consumed, as a bitmap. Because positions are global,
 * any world size can re-partition what is left: none lost, none repeated. A rank's own
 * checkpoint also says what its run started from (`base`), so that rank alone can go on with
 * its own share on the same world (as a DataLoader worker restores from its own state).
 */
import { z } from "zod";
import { ResumeError } from "../errors.js";
import { ORDER_VERSION } from "../sampler/order-version.js";

export const Checkpoint = z.object({
  version: z.literal(1),
  /** The epoch order's version (ORDER_VERSION); absent in checkpoints of order 2 and before. */
  order: z.number().int().positive().optional(),
  /** Hash of the clip plan (objects, etags, clip counts, sampling options): a resume must match it. */
  fingerprint: z.string(),
  seed: z.number().int().nonnegative(),
  epoch: z.number().int().nonnegative(),
  /**
   * Clips in the epoch order. Absent where the order streams from table pages read as it
   * reaches them (nobody knows the epoch's total at open): positions are still the order's,
   * and the bitmap is as long as its last consumed position needs.
   */
  total: z.number().int().nonnegative().optional(),
  /** Consumed positions, a little-endian bitmap in base64. */
  consumed: z.string(),
  /** How many bits of `consumed` are set. */
  count: z.number().int().nonnegative(),
  /** The world size of the run that wrote it and which of its ranks are merged in. */
  world: z.number().int().positive(),
  ranks: z.array(z.number().int().nonnegative()),
  /** The dataset table generation the plan was made from, where the dataset has a table: a resume plans from the same one. */
  generation: z.number().int().positive().optional(),
  /**
   * Written by a rank of a world above 1: the positions consumed when its run opened (what the
   * run resumed from), encoded as `consumed`, or "" for none. The run's shares were dealt from
   * it, so this checkpoint alone resumes the same rank of the same world: its share, less what
   * it consumed. Merging drops it (a merged checkpoint re-partitions what is left).
   */
  base: z.string().optional(),
});
export type Checkpoint = z.infer<typeof Checkpoint>;

/**
 * A mutable set of consumed positions in [0, total); with `total` Infinity (an order of unknown
 * length) the bitmap grows as positions are added.
 */
export class PositionSet {
  private map: Uint8Array;
  count = 0;
  constructor(
    readonly total: number,
    bits?: Uint8Array,
  ) {
    this.map = bits ?? new Uint8Array(Number.isFinite(total) ? Math.ceil(total / 8) : 0);
    if (bits) for (const b of bits) this.count += popcount(b);
  }
  /** The bitmap: ⌈total / 8⌉ bytes, or (unknown total) up to the last byte with a position set. */
  get bits(): Uint8Array {
    if (Number.isFinite(this.total)) return this.map;
    let end = this.map.length;
    while (end > 0 && this.map[end - 1] === 0) end--;
    return this.map.subarray(0, end);
  }
  has(p: number): boolean {
    return ((this.map[p >> 3] ?? 0) & (1 << (p & 7))) !== 0;
  }
  add(p: number): void {
    if (!Number.isInteger(p) || p < 0 || p >= this.total)
      throw new RangeError(`position ${p} outside [0, ${this.total})`);
    if (this.has(p)) return;
    if (p >> 3 >= this.map.length) {
      const grown = new Uint8Array(Math.max((p >> 3) + 1, 2 * this.map.length));
      grown.set(this.map);
      this.map = grown;
    }
    this.map[p >> 3]! |= 1 << (p & 7);
    this.count++;
  }
  /** Positions not in the set, ascending: what a resumed run still has to deliver (a finite total only). */
  remaining(): number[] {
    if (!Number.isFinite(this.total)) throw new RangeError("remaining() needs the epoch's total");
    const out: number[] = [];
    for (let p = 0; p < this.total; p++) if (!this.has(p)) out.push(p);
    return out;
  }
}

/** A checkpoint's epoch total as a PositionSet takes it: Infinity where the checkpoint has none. */
const totalOf = (c: Checkpoint) => c.total ?? Infinity;

function popcount(b: number): number {
  let n = 0;
  for (; b; b &= b - 1) n++;
  return n;
}

/** Encodes a rank's view: everything consumed before plus what this rank consumed. */
export function toCheckpoint(
  set: PositionSet,
  meta: {
    fingerprint: string;
    seed: number;
    epoch: number;
    world: number;
    rank: number;
    generation?: number | undefined;
    /** What the run started from, for a rank of a world above 1 (see `Checkpoint.base`). */
    base?: PositionSet | undefined;
  },
): Checkpoint {
  return {
    ...(meta.generation !== undefined ? { generation: meta.generation } : {}),
    ...(meta.base ? { base: meta.base.count > 0 ? Buffer.from(meta.base.bits).toString("base64") : "" } : {}),
    version: 1,
    order: ORDER_VERSION,
    fingerprint: meta.fingerprint,
    seed: meta.seed,
    epoch: meta.epoch,
    ...(Number.isFinite(set.total) ? { total: set.total } : {}),
    consumed: Buffer.from(set.bits).toString("base64"),
    count: set.count,
    world: meta.world,
    ranks: [meta.rank],
  };
}

function decodeBits(c: Checkpoint, field: "consumed" | "base" = "consumed"): Uint8Array {
  const encoded = c[field] ?? "";
  if (field === "base" && encoded === "") return new Uint8Array(Math.ceil((c.total ?? 0) / 8));
  const bits = new Uint8Array(Buffer.from(encoded, "base64"));
  // Without a total the bitmap is as long as its last position needs.
  if (c.total !== undefined && bits.length !== Math.ceil(c.total / 8)) {
    throw new ResumeError(
      "ERR_RESUME_INVALID",
      `Expected a bitmap of ${Math.ceil(c.total / 8)} bytes but received ${bits.length}`,
    );
  }
  return bits;
}

/**
 * Unions the checkpoints of the ranks of one run; the result resumes on any world size.
 *
 * @example
 * const all = mergeCheckpoints(await Promise.all(ranks.map((r) => r.state())));
 */
export function mergeCheckpoints(list: readonly Checkpoint[]): Checkpoint {
  const first = list[0];
  if (!first) throw new ResumeError("ERR_RESUME_INVALID", "Expected at least one checkpoint but received none");
  let bits = decodeBits(first).slice();
  const ranks = new Set(first.ranks);
  for (const c of list.slice(1)) {
    if (
      c.fingerprint !== first.fingerprint ||
      c.seed !== first.seed ||
      c.epoch !== first.epoch ||
      c.world !== first.world ||
      c.order !== first.order ||
      c.generation !== first.generation
    ) {
      throw new ResumeError(
        "ERR_RESUME_MISMATCH",
        `Expected checkpoints of one run (fingerprint ${first.fingerprint}, seed ${first.seed}, epoch ${first.epoch}, world ${first.world}) but received fingerprint ${c.fingerprint}, seed ${c.seed}, epoch ${c.epoch}, world ${c.world}`,
      );
    }
    const other = decodeBits(c);
    // Bitmaps of an order of unknown length are as long as each rank's last position needs.
    if (other.length > bits.length) {
      const grown = new Uint8Array(other.length);
      grown.set(bits);
      bits = grown;
    }
    for (let i = 0; i < other.length; i++) bits[i]! |= other[i]!;
    for (const r of c.ranks) ranks.add(r);
  }
  const set = new PositionSet(totalOf(first), bits);
  const { base: _base, ...rest } = first;
  return {
    ...rest,
    consumed: Buffer.from(set.bits).toString("base64"),
    count: set.count,
    ranks: [...ranks].sort((a, b) => a - b),
  };
}

/**
 * Checks a (merged) checkpoint against the run about to start and returns its consumed set.
 * Every rank of the writing run must be merged in, else the missing ranks' clips would repeat;
 * only a rank's own checkpoint with its `base` resumes alone, on that rank of that world, and
 * then `base` is the set its share is dealt from.
 */
export function restore(
  resume: Checkpoint | readonly Checkpoint[],
  expected: { fingerprint: string; total: number | undefined; rank?: number; world?: number },
): { set: PositionSet; seed: number; epoch: number; base?: PositionSet } {
  const c = Array.isArray(resume) ? mergeCheckpoints(resume) : (resume as Checkpoint);
  // Before the order had a version in checkpoints it was 2; another version's positions mean other clips.
  if ((c.order ?? 2) !== ORDER_VERSION) {
    throw new ResumeError(
      "ERR_RESUME_MISMATCH",
      `Expected a checkpoint of epoch order ${ORDER_VERSION} but received one of order ${c.order ?? 2}, written by an ec whose epoch order differs; resume it with that version or start the epoch afresh`,
    );
  }
  if (c.fingerprint !== expected.fingerprint || c.total !== expected.total) {
    throw new ResumeError(
      "ERR_RESUME_MISMATCH",
      `Expected a checkpoint of this dataset and sampling (fingerprint ${expected.fingerprint}, ${expected.total ?? "a streamed number of"} clips) but received fingerprint ${c.fingerprint}, ${c.total ?? "a streamed number of"} clips`,
    );
  }
  if (c.ranks.length !== c.world) {
    const alone = c.base !== undefined && c.ranks.length === 1;
    if (alone && c.ranks[0] === expected.rank && c.world === expected.world) return ownShare(c);
    const missing = [...Array(c.world).keys()].filter((r) => !c.ranks.includes(r));
    const own = alone ? `, or resume rank ${c.ranks[0]} of world ${c.world} with it alone` : "";
    throw new ResumeError(
      "ERR_RESUME_INCOMPLETE",
      `Expected the checkpoints of all ${c.world} ranks but received ranks ${c.ranks.join(", ")}; missing ${missing.join(", ")} (merge them with mergeCheckpoints${own})`,
    );
  }
  return { set: new PositionSet(totalOf(c), decodeBits(c)), seed: c.seed, epoch: c.epoch };
}

/** A rank's own checkpoint: what it consumed, and the set its run's shares were dealt from. */
function ownShare(c: Checkpoint): { set: PositionSet; seed: number; epoch: number; base: PositionSet } {
  const set = new PositionSet(totalOf(c), decodeBits(c));
  const base = new PositionSet(totalOf(c), decodeBits(c, "base"));
  for (let i = 0; i < base.bits.length; i++) {
    if ((base.bits[i]! & ~(set.bits[i] ?? 0)) !== 0) {
      throw new ResumeError(
        "ERR_RESUME_INVALID",
        "Expected every position of the checkpoint's base among its consumed positions but some are not",
      );
    }
  }
  return { set, seed: c.seed, epoch: c.epoch, base };
}
