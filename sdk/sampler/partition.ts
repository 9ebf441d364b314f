/**
 * Which positions of the epoch order a rank delivers: the positions not yet consumed, dealt
 * round-robin. Disjoint and covering across ranks, sizes differing by at most one, and every
 * rank walks the same shards at the same time (good for a host-shared cache).
 *
 * @example
 * partition([0, 1, 2, 3, 4], 1, 2); // [1, 3]
 */
export function partition(remaining: readonly number[], rank: number, world: number): number[] {
  const out: number[] = [];
  for (let i = rank; i < remaining.length; i += world) out.push(remaining[i]!);
  return out;
}
