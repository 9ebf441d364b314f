/**
 * The origin-cache as its own process (one per GPU host, as deployed), so its CPU and memory
 * are measured apart from the bench harness and added to the ec rows.
 * argv[2]: JSON { upstream, dir, maxBytes, caFile }. Prints { url } once listening; SIGTERM stops it.
 */
import { readFileSync } from "node:fs";
import { startCache } from "../../../origin-cache/index.js";

interface CacheArgs {
  readonly upstream: string;
  readonly dir: string;
  readonly maxBytes: number;
  readonly caFile: string;
  readonly blockSize: number;
}

async function main(): Promise<void> {
  const a = JSON.parse(process.argv[2] ?? "{}") as CacheArgs;
  const svc = await startCache({
    upstreams: [a.upstream],
    dir: a.dir,
    maxBytes: a.maxBytes,
    blockSize: a.blockSize,
    tls: { ca: readFileSync(a.caFile, "utf8") },
    logLevel: "silent",
  });
  process.stdout.write(`${JSON.stringify({ url: svc.url })}\n`);
  const stop = (): void => void svc.close().then(() => process.exit(0));
  process.once("SIGTERM", stop).once("SIGINT", stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
