/**
 * Child process for the kill -9 test: runs a cache that keeps pulling and writing blocks (the
 * bound forces constant eviction) until it is killed. Reports progress as JSON lines.
 */
import { createRangeCache } from "../../origin-cache/index.js";

interface ChildArgs {
  upstream: string;
  dir: string;
  maxBytes: number;
  blockSize: number;
  objects: { url: string; size: number }[];
}

async function main(): Promise<void> {
  const args = JSON.parse(process.env.EC_CRASH_CHILD ?? "{}") as ChildArgs;
  const cache = await createRangeCache({
    upstreams: [args.upstream],
    dir: args.dir,
    maxBytes: args.maxBytes,
    blockSize: args.blockSize,
    logLevel: "silent",
  });
  for (let round = 0; ; round++) {
    await Promise.all(
      args.objects.map(async (o) => {
        for (let at = 0; at < o.size; at += args.blockSize) {
          await cache.read(o.url, at, Math.min(args.blockSize, o.size - at));
          const s = cache.stats();
          process.stdout.write(`${JSON.stringify({ round, blocks: s.blocks, misses: s.misses })}\n`);
        }
      }),
    );
  }
}

void main();
