/**
 * `ec bench URL`: streams the same clips several times in one run and reports each pass side by
 * side — the first pass cold, the later ones warm when they share a cache (`--cache URL`, an
 * origin-cache; without it each pass has its own in-process cache and only the OS page cache and
 * the index cache are warm). Takes every `ec stream` flag and the same dataset URLs (edge,
 * r2://, s3://, a local directory).
 */
import { describeReceived, EcError } from "../../common/errors.js";
import { InvalidOptionError } from "../errors.js";
import type { StreamStats } from "../stats.js";
import { parseStreamArgs, streamWithProgress } from "./stream.js";

const USAGE = `usage: ec bench URL [--passes N] [any ec stream flag: --cache URL --frames N --size HxW --limit CLIPS ...] [--json]
  Streams the same clips N times (default 2) and prints each pass's clips/s, frames/s, MB/s,
  bytes per clip, stall and cache hits, and every pass's throughput over the first's.
`;

/** One pass's figures, as printed and as the --json line carries them. */
export interface BenchPass {
  readonly pass: number;
  readonly clips_per_s: number;
  readonly frames_per_s: number;
  readonly mb_per_s: number;
  readonly bytes_per_clip: number;
  readonly stall_ratio: number;
  readonly cache_hit_ratio: number;
  readonly errors: number;
  readonly stats: StreamStats;
}

export function passFigures(pass: number, s: StreamStats): BenchPass {
  const per = (n: number) => (s.seconds > 0 ? n / s.seconds : 0);
  return {
    pass,
    clips_per_s: per(s.clips),
    frames_per_s: per(s.frames),
    mb_per_s: per(s.bytes_fetched / 1e6),
    bytes_per_clip: s.clips > 0 ? s.bytes_fetched / s.clips : 0,
    stall_ratio: s.stall_ratio,
    cache_hit_ratio: s.cache_hit_ratio,
    errors: Object.values(s.errors).reduce((a, b) => a + b, 0),
    stats: s,
  };
}

/** Splits `--passes N` off argv; the rest are `ec stream` flags. */
export function takePasses(argv: string[]): { passes: number; rest: string[] } {
  const rest = [...argv];
  const at = rest.findIndex((a) => a === "--passes" || a.startsWith("--passes="));
  if (at < 0) return { passes: 2, rest };
  const raw = rest[at]!.includes("=") ? rest[at]!.slice("--passes=".length) : rest[at + 1];
  rest.splice(at, rest[at]!.includes("=") ? 1 : 2);
  const passes = Number(raw);
  if (raw === undefined || !/^\d+$/.test(raw) || passes < 1 || passes > 100) {
    throw new InvalidOptionError(
      `Expected an integer from 1 to 100 for --passes but received ${describeReceived(raw)}`,
    );
  }
  return { passes, rest };
}

function row(p: BenchPass, first: BenchPass): string {
  const vs = first.clips_per_s > 0 ? (p.clips_per_s / first.clips_per_s).toFixed(2) : "-";
  return [
    `pass ${p.pass}`.padEnd(7),
    `${p.clips_per_s.toFixed(1)} clips/s`.padStart(15),
    `${p.frames_per_s.toFixed(1)} frames/s`.padStart(17),
    `${p.mb_per_s.toFixed(1)} MB/s`.padStart(12),
    `${(p.bytes_per_clip / 1e3).toFixed(1)} kB/clip`.padStart(15),
    `stall ${(p.stall_ratio * 100).toFixed(1)}%`.padStart(12),
    `hits ${(p.cache_hit_ratio * 100).toFixed(1)}%`.padStart(12),
    `errors ${p.errors}`.padStart(10),
    `×${vs} of pass 1`.padStart(14),
  ].join(" ");
}

/**
 * @example
 * await main(["http://127.0.0.1:8787/v1/datasets/gameplay", "--cache", "http://127.0.0.1:8788", "--limit", "64", "--json"]);
 */
export async function main(argv: string[]): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(USAGE);
    return 0;
  }
  let passes: number;
  let parsed: ReturnType<typeof parseStreamArgs>;
  try {
    const split = takePasses(argv);
    passes = split.passes;
    parsed = parseStreamArgs(split.rest);
    if (parsed.md5)
      throw new InvalidOptionError(
        "Expected no --md5 with ec bench (use ec stream to check frames) but received --md5",
      );
  } catch (err) {
    process.stderr.write(`ec bench: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const { url, options, json, stepMs } = parsed;
  const results: BenchPass[] = [];
  for (let pass = 1; pass <= passes; pass++) {
    if (!json) process.stderr.write(`pass ${pass}/${passes}\n`);
    try {
      const { stats, failed } = await streamWithProgress(url, options, { quiet: json, stepMs });
      if (failed) throw failed;
      results.push(passFigures(pass, stats));
    } catch (err) {
      const code = err instanceof EcError ? err.code : "ERR_STREAM_FAILED";
      process.stderr.write(`ec bench: pass ${pass}: [${code}] ${(err as Error).message}\n`);
      return err instanceof InvalidOptionError ? 2 : 1;
    }
  }
  const first = results[0]!;
  const ratios = results.map((p) => (first.clips_per_s > 0 ? p.clips_per_s / first.clips_per_s : 0));
  if (json) {
    process.stdout.write(`${JSON.stringify({ url, passes: results, vs_first_pass: ratios })}\n`);
  } else {
    process.stderr.write(`${results.map((p) => row(p, first)).join("\n")}\n`);
  }
  return 0;
}
