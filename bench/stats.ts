/** Small statistics the benches share. */

/**
 * The middle value of `xs` (the upper middle for an even count), `xs` left as it was.
 *
 * @example
 * median([3, 1, 2]); // 2
 */
export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
