import { open } from "node:fs/promises";
import { request } from "undici";

/** The outcome of reading one object back through signed range requests. */
export interface VerifyResult {
  readonly key: string;
  /** Requests made: the whole object plus each range. */
  readonly reads: number;
  readonly bytes: number;
  /** Human-readable descriptions of every read that differed from the local file. */
  readonly mismatches: readonly string[];
}

/** A small seeded generator, so a failing demo run can be repeated range for range. */
export function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

/** Range headers to check: random spans, an open end, a suffix, and the first and last byte. */
export function rangesFor(size: number, count: number, random: () => number): string[] {
  if (size === 0) return [];
  const out = ["bytes=0-0", `bytes=${size - 1}-`];
  for (let i = 0; i < count; i++) {
    const a = Math.floor(random() * size);
    const b = Math.min(size - 1, a + Math.floor(random() * Math.min(size, 1 << 20)));
    out.push(i % 3 === 2 ? `bytes=-${b - a + 1}` : `bytes=${a}-${b}`);
  }
  return out;
}

function expectedSpan(header: string, size: number): [number, number] {
  const suffix = /^bytes=-(\d+)$/.exec(header);
  if (suffix) return [Math.max(0, size - Number(suffix[1])), size - 1];
  const m = /^bytes=(\d+)-(\d*)$/.exec(header)!;
  return [Number(m[1]), m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1)];
}

/**
 * Reads `url` (a signed object URL) whole and through `ranges`, and compares every byte,
 * Content-Range and status with the local file at `path`.
 *
 * @example
 * const r = await verifyObject("a.mp4", url, "./a.mp4", rangesFor(size, 6, rng(1)));
 * if (r.mismatches.length) console.error(r.mismatches);
 */
export async function verifyObject(
  key: string,
  url: string,
  path: string,
  ranges: readonly string[],
): Promise<VerifyResult> {
  const file = await open(path, "r");
  const mismatches: string[] = [];
  let bytes = 0;
  try {
    const size = (await file.stat()).size;
    const read = async (start: number, end: number) => {
      const buf = Buffer.alloc(end - start + 1);
      await file.read(buf, 0, buf.length, start);
      return buf;
    };
    const whole = await request(url);
    const body = Buffer.from(await whole.body.arrayBuffer());
    bytes += body.length;
    if (whole.statusCode !== 200) mismatches.push(`${key}: whole read answered ${whole.statusCode}`);
    else if (size === 0 ? body.length !== 0 : !body.equals(await read(0, size - 1)))
      mismatches.push(`${key}: whole body differs`);
    for (const range of ranges) {
      const [start, end] = expectedSpan(range, size);
      const res = await request(url, { headers: { range } });
      const got = Buffer.from(await res.body.arrayBuffer());
      bytes += got.length;
      const contentRange = res.headers["content-range"];
      if (res.statusCode !== 206) mismatches.push(`${key} ${range}: status ${res.statusCode}, expected 206`);
      else if (contentRange !== `bytes ${start}-${end}/${size}`)
        mismatches.push(`${key} ${range}: Content-Range ${String(contentRange)}`);
      else if (!got.equals(await read(start, end))) mismatches.push(`${key} ${range}: bytes differ`);
    }
  } finally {
    await file.close();
  }
  return { key, reads: ranges.length + 1, bytes, mismatches };
}
