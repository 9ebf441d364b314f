/**
 * Shuffle algorithms, registered by name: each turns the clip plan into the global epoch order,
 * deterministic for (seed, epoch). Another algorithm is one `registerShuffle` call.
 */
import { InvalidOptionError } from "../errors.js";
import type { ClipPlan, ClipRef } from "./clip-plan.js";
import { seededRng, shuffleInPlace, type Rng } from "./rng.js";

export interface ShuffleParams {
  readonly seed: number;
  readonly epoch: number;
  /** Clips held by the bounded shuffle buffer. */
  readonly buffer: number;
}

export type ShuffleAlgorithm = (plan: ClipPlan, p: ShuffleParams) => ClipRef[];

const algorithms = new Map<string, ShuffleAlgorithm>();

/**
 * Adds (or replaces) a shuffle algorithm selectable with the `shuffle` option.
 *
 * @example
 * registerShuffle("reverse", (plan, p) => epochOrder(plan, "none", p).reverse());
 */
export function registerShuffle(name: string, algorithm: ShuffleAlgorithm): void {
  algorithms.set(name, algorithm);
}

/** The names `shuffle` accepts. */
export function shuffleNames(): string[] {
  return [...algorithms.keys()];
}

/**
 * @example
 * const order = epochOrder(plan, "shard-buffer", { seed: 1, epoch: 0, buffer: 256 });
 */
export function epochOrder(plan: ClipPlan, name: string | false, p: ShuffleParams): ClipRef[] {
  return shuffleAlgorithm(name)(plan, p);
}

/**
 * The registered algorithm of that name; open() asks before any I/O so a typo fails fast.
 *
 * @example
 * shuffleAlgorithm("global"); // throws ERR_INVALID_OPTION for an unknown name
 */
export function shuffleAlgorithm(name: string | false): ShuffleAlgorithm {
  const algorithm = algorithms.get(name === false ? "none" : name);
  if (!algorithm) {
    throw new InvalidOptionError(`Expected one of ${shuffleNames().map((n) => JSON.stringify(n)).join(", ")} for shuffle but received ${JSON.stringify(name)}`);
  }
  return algorithm;
}

function clipsOfShards(plan: ClipPlan, shardOrder: readonly number[]): ClipRef[] {
  const out: ClipRef[] = [];
  for (const s of shardOrder) {
    for (const object of plan.shards[s]!.objects) {
      for (const start of plan.objects[object]!.starts) out.push({ object, start });
    }
  }
  return out;
}

/**
 * Streaming shuffle with a bounded buffer, as a loader that sees clips one by one would do it:
 * keeps reads local to a few shards at a time while mixing across them.
 */
export function bufferShuffle<T>(items: readonly T[], size: number, rng: Rng): T[] {
  const out: T[] = [];
  const buf: T[] = [];
  for (const item of items) {
    if (buf.length < size) {
      buf.push(item);
      continue;
    }
    const j = Math.floor(rng() * size);
    out.push(buf[j]!);
    buf[j] = item;
  }
  shuffleInPlace(buf, rng);
  for (const item of buf) out.push(item);
  return out;
}

const identity = (plan: ClipPlan) => plan.shards.map((_, i) => i);

registerShuffle("none", (plan) => clipsOfShards(plan, identity(plan)));

registerShuffle("shard-buffer", (plan, p) => {
  const shards = shuffleInPlace(identity(plan), seededRng(p.seed, p.epoch, "shards"));
  return bufferShuffle(clipsOfShards(plan, shards), p.buffer, seededRng(p.seed, p.epoch, "buffer"));
});

registerShuffle("global", (plan, p) => shuffleInPlace(clipsOfShards(plan, identity(plan)), seededRng(p.seed, p.epoch, "global")));
