/**
 * The origin-cache's block store alone, no network: CPU (user + system, every thread of the
 * process, so the file-system calls of the libuv pool count) and wall time per block to store
 * blocks and to read them back warm, side by side with the same reads from a page-cached local
 * file holding the same bytes.
 *
 * Warm reads take `--reads` (default one per block) random spans of `--read-kib` inside the blocks.
 * `--run N` stores the blocks N at a time with putRun, as the cache stores the blocks of one pull
 * (default 1: one put per block). The put phase ends once every block is durable (the last group's
 * fdatasync included).
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/block-store.js [--blocks 4096] [--block-kib 16] [--read-kib 16] [--reads N] [--run N] [--concurrency 16] [--json]
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, open, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { BlockStore } from "../origin-cache/store/block-store.js";
import { median } from "./stats.js";

const { values } = parseArgs({
  options: {
    blocks: { type: "string", default: "4096" },
    "block-kib": { type: "string", default: "16" },
    "read-kib": { type: "string", default: "16" },
    reads: { type: "string" },
    concurrency: { type: "string", default: "16" },
    run: { type: "string", default: "1" },
    rounds: { type: "string", default: "3" },
    json: { type: "boolean", default: false },
  },
});
const BLOCKS = Number(values.blocks);
const BLOCK = Number(values["block-kib"]) * 1024;
const READ = Math.min(BLOCK, Number(values["read-kib"]) * 1024);
const READS = Number(values.reads ?? BLOCKS);
const CONCURRENCY = Number(values.concurrency);
const ROUNDS = Number(values.rounds);
const RUN = Number(values.run);

async function pool(n: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

/** Wall seconds and CPU microseconds (user + system) of `fn`. */
async function measured(fn: () => Promise<void>): Promise<{ seconds: number; cpuUs: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const c = process.cpuUsage(c0);
  return { seconds: (performance.now() - t0) / 1000, cpuUs: c.user + c.system };
}

async function main(): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), "ec-bench-store-"));
  const data = randomBytes(BLOCKS * BLOCK);
  const local = join(work, "local.bin");
  await writeFile(local, data);
  const opts = { dir: join(work, "store"), maxBytes: 2 * BLOCKS * (BLOCK + 4096), blockSize: BLOCK };
  const store = await BlockStore.open(opts);
  try {
    const id = (i: number): { key: string; etag: string; index: number } => ({
      key: "/v1/objects/bench.mp4",
      etag: '"bench"',
      index: i,
    });
    const block = (i: number): Buffer => data.subarray(i * BLOCK, (i + 1) * BLOCK);
    const runs = Math.ceil(BLOCKS / RUN);
    const put = await measured(() =>
      pool(runs, async (r) => {
        const first = r * RUN;
        const n = Math.min(RUN, BLOCKS - first);
        if (n === 1) await store.put(id(first), block(first));
        else
          await Promise.all(
            store.putRun(
              Array.from({ length: n }, (_, i) => id(first + i)),
              Array.from({ length: n }, (_, i) => block(first + i)),
            ),
          );
      }).then(() => store.flush()),
    );
    if (store.blocks !== BLOCKS) throw new Error(`Expected ${BLOCKS} stored blocks but received ${store.blocks}`);
    let seed = 12345;
    const next = (): number => (seed = (seed * 1103515245 + 12345) >>> 0);
    const spans = Array.from({ length: READS }, (_, i) => ({
      block: READS === BLOCKS ? i : next() % BLOCKS,
      at: READ === BLOCK ? 0 : next() % (BLOCK - READ + 1),
    }));
    const fh = await open(local, "r");
    const reads: { store: { seconds: number; cpuUs: number }; file: { seconds: number; cpuUs: number } }[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const file = await measured(() =>
        pool(READS, async (i) => {
          const { block, at } = spans[i] as { block: number; at: number };
          const buf = Buffer.allocUnsafe(READ);
          await fh.read(buf, 0, READ, block * BLOCK + at);
        }),
      );
      const fromStore = await measured(() =>
        pool(READS, async (i) => {
          const { block, at } = spans[i] as { block: number; at: number };
          const got = await store.read(id(block), at, READ);
          if (!got || got.length !== READ)
            throw new Error(`Expected ${READ} bytes of block ${block} but received ${got?.length}`);
        }),
      );
      reads.push({ store: fromStore, file });
    }
    await fh.close();
    const mbs = (s: number): number => (READS * READ) / s / 1e6;
    const result = {
      config: {
        blocks: BLOCKS,
        blockKiB: BLOCK / 1024,
        readKiB: READ / 1024,
        reads: READS,
        concurrency: CONCURRENCY,
        rounds: ROUNDS,
        run: RUN,
        loadavg: loadavg().map((l) => Number(l.toFixed(1))),
      },
      put: { cpuUsPerBlock: put.cpuUs / BLOCKS, blocksPerSec: BLOCKS / put.seconds },
      read: {
        cpuUsPerRead: median(reads.map((r) => r.store.cpuUs)) / READS,
        fileCpuUsPerRead: median(reads.map((r) => r.file.cpuUs)) / READS,
        storeMBs: median(reads.map((r) => mbs(r.store.seconds))),
        fileMBs: median(reads.map((r) => mbs(r.file.seconds))),
        ratio: median(reads.map((r) => r.file.seconds / r.store.seconds)),
      },
    };
    if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else {
      const f = (x: number): string => x.toFixed(1);
      process.stdout.write(
        [
          `load average  ${result.config.loadavg.join(" ")}`,
          `put           ${BLOCKS} blocks of ${BLOCK / 1024} KiB, ${RUN} a call: ${f(result.put.cpuUsPerBlock)} µs CPU per block, ${f(result.put.blocksPerSec)} blocks/s`,
          `warm read     ${READS} reads of ${READ / 1024} KiB: store ${f(result.read.cpuUsPerRead)} µs CPU per read vs local file ${f(result.read.fileCpuUsPerRead)}`,
          `              store ${f(result.read.storeMBs)} MB/s vs local file ${f(result.read.fileMBs)} MB/s → ratio ${result.read.ratio.toFixed(2)} (median of ${ROUNDS} alternating rounds)`,
        ].join("\n") + "\n",
      );
    }
  } finally {
    await store.close();
    await rm(work, { recursive: true, force: true });
  }
}

await main();
