/**
 * Exact resume. A checkpoint names the epoch order (dataset fingerprint + seed + epoch) and the
 * set of positions of that order already consumed, as a bitmap. Because positions are global,
 * any world size can re-partition what is left: none lost, none repeated.
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
  /** Clips in the epoch order. */
  total: z.number().int().nonnegative(),
  /** Consumed positions, a little-endian bitmap in base64. */
  consumed: z.string(),
  /** How many bits of `consumed` are set. */
  count: z.number().int().nonnegative(),
  /** The world size of the run that wrote it and which of its ranks are merged in. */
  world: z.number().int().positive(),
  ranks: z.array(z.number().int().nonnegative()),
  /** The dataset table generation the plan was made from, where the dataset has a table: a resume plans from the same one. */
  generation: z.number().int().positive().optional(),
});
export type Checkpoint = z.infer<typeof Checkpoint>;

/** A mutable set of consumed positions in [0, total). */
export class PositionSet {
  readonly bits: Uint8Array;
  count = 0;
  constructor(
    readonly total: number,
    bits?: Uint8Array,
  ) {
    this.bits = bits ?? new Uint8Array(Math.ceil(total / 8));
    if (bits) for (const b of bits) this.count += popcount(b);
  }
  has(p: number): boolean {
    return (this.bits[p >> 3]! & (1 << (p & 7))) !== 0;
  }
  add(p: number): void {
    if (p < 0 || p >= this.total) throw new RangeError(`position ${p} outside [0, ${this.total})`);
    if (this.has(p)) return;
    this.bits[p >> 3]! |= 1 << (p & 7);
    this.count++;
  }
  /** Positions not in the set, ascending: what a resumed run still has to deliver. */
  remaining(): number[] {
    const out: number[] = [];
    for (let p = 0; p < this.total; p++) if (!this.has(p)) out.push(p);
    return out;
  }
}

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
  },
): Checkpoint {
  return {
    ...(meta.generation !== undefined ? { generation: meta.generation } : {}),
    version: 1,
    order: ORDER_VERSION,
    fingerprint: meta.fingerprint,
    seed: meta.seed,
    epoch: meta.epoch,
    total: set.total,
    consumed: Buffer.from(set.bits).toString("base64"),
    count: set.count,
    world: meta.world,
    ranks: [meta.rank],
  };
}

function decodeBits(c: Checkpoint): Uint8Array {
  const bits = new Uint8Array(Buffer.from(c.consumed, "base64"));
  if (bits.length !== Math.ceil(c.total / 8)) {
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
  const bits = decodeBits(first).slice();
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
    for (let i = 0; i < bits.length; i++) bits[i]! |= other[i]!;
    for (const r of c.ranks) ranks.add(r);
  }
  const set = new PositionSet(first.total, bits);
  return {
    ...first,
    consumed: Buffer.from(bits).toString("base64"),
    count: set.count,
    ranks: [...ranks].sort((a, b) => a - b),
  };
}

/**
 * Checks a (merged) checkpoint against the run about to start and returns its consumed set.
 * Every rank of the writing run must be merged in, else the missing ranks' clips would repeat.
 */
export function restore(
  resume: Checkpoint | readonly Checkpoint[],
  expected: { fingerprint: string; total: number },
): { set: PositionSet; seed: number; epoch: number } {
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
      `Expected a checkpoint of this dataset and sampling (fingerprint ${expected.fingerprint}, ${expected.total} clips) but received fingerprint ${c.fingerprint}, ${c.total} clips`,
    );
  }
  if (c.ranks.length !== c.world) {
    const missing = [...Array(c.world).keys()].filter((r) => !c.ranks.includes(r));
    throw new ResumeError(
      "ERR_RESUME_INCOMPLETE",
      `Expected the checkpoints of all ${c.world} ranks but received ranks ${c.ranks.join(", ")}; missing ${missing.join(", ")} (merge them with mergeCheckpoints)`,
    );
  }
  return { set: new PositionSet(c.total, decodeBits(c)), seed: c.seed, epoch: c.epoch };
}
