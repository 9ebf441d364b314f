/** The ranges both pullers of the transport bench ask for, and what each pull reports. */

export interface PullRange {
  /** Path and signed query on the emulator. */
  readonly path: string;
  readonly offset: number;
  readonly length: number;
}

/** What one puller did: bytes it received, its wall time, and its CPU seconds (user + system, all threads). */
export interface PullResult {
  readonly bytes: number;
  readonly seconds: number;
  readonly cpuSeconds: number;
  /** Upstream requests it sent, when it counts them. */
  readonly requests?: number;
}

/**
 * Every `span`-sized piece of each of `objects` objects of `size` bytes, object by object, in
 * order: what a stream (or a plan of consecutive clips) asks of one object after another.
 *
 * @example
 * rangesOf("/v1/objects/t/m", 2, 4 << 20, 1 << 20).length; // 8
 */
export function rangesOf(prefix: string, objects: number, size: number, span: number): PullRange[] {
  const out: PullRange[] = [];
  for (let o = 0; o < objects; o++)
    for (let offset = 0; offset < size; offset += span)
      out.push({ path: `${prefix}${o}.mp4?exp=9999999999&sig=bench`, offset, length: Math.min(span, size - offset) });
  return out;
}
