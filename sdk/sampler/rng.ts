import { createHash } from "node:crypto";

/** A seeded generator of floats in [0, 1). */
export type Rng = () => number;

/**
 * A deterministic generator for (seed, epoch, purpose): the same triple gives the same
 * sequence on every machine and Node version (mulberry32 over a sha256-derived state).
 *
 * @example
 * const rng = seededRng(7, 0, "shards"); rng(); // always the same first value
 */
export function seededRng(seed: number, epoch: number, purpose: string): Rng {
  let state = createHash("sha256").update(`${seed}:${epoch}:${purpose}`).digest().readUInt32LE(0);
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** In-place Fisher–Yates. */
export function shuffleInPlace<T>(items: T[], rng: Rng): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    const t = items[i]!;
    items[i] = items[j]!;
    items[j] = t;
  }
  return items;
}
