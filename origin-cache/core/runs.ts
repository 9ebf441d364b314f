/** `indices` (ascending) as runs of consecutive ones, each at most `most` long: one upstream request per run. */
export function runsOf(indices: readonly number[], most: number): { first: number; count: number }[] {
  const runs: { first: number; count: number }[] = [];
  for (const i of indices) {
    const last = runs[runs.length - 1];
    if (last && last.first + last.count === i && last.count < most) last.count++;
    else runs.push({ first: i, count: 1 });
  }
  return runs;
}
