/**
 * The disk under the cache fills up: a real 1 MiB tmpfs (root can mount one here) as the block
 * directory of a cache allowed far more. Every read keeps answering the exact bytes, the store
 * stays within what the disk holds, and the log says why blocks are not kept.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { request } from "undici";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startCache, type CacheService } from "../../origin-cache/index.js";
import { startRangeServer, type RangeServer } from "../helpers/range-server.js";
import { report } from "./stack.js";

const SIZE = 4 << 20;
const data = randomBytes(SIZE);
let mountDir: string;
let mounted = false;
let rs: RangeServer;

function tryMount(dir: string): boolean {
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", dir], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  mountDir = await mkdtemp(join(tmpdir(), "ec-rel-full-"));
  mounted = tryMount(mountDir);
  rs = await startRangeServer();
  rs.put("/v1/objects/full.bin", data);
});

afterAll(async () => {
  await rs?.close();
  if (mounted) execFileSync("umount", [mountDir]);
  await rm(mountDir, { recursive: true, force: true });
});

it.runIf(process.getuid?.() === 0)(
  "a full disk under the cache: it keeps serving exact bytes and logs why it stops caching",
  async () => {
    expect(mounted).toBe(true);
    const lines: string[] = [];
    const sink = new Writable({
      write: (chunk: Buffer, _enc, done) => (lines.push(...chunk.toString().split("\n").filter(Boolean)), done()),
    });
    let svc: CacheService | undefined;
    try {
      svc = await startCache({
        upstreams: [rs.url],
        dir: join(mountDir, "cache"),
        maxBytes: 64 << 20,
        blockSize: 64 << 10,
        logger: pino({ level: "info" }, sink),
      });
      const target = `${svc.url}/v1/fetch?url=${encodeURIComponent(`${rs.url}/v1/objects/full.bin`)}`;
      let reads = 0;
      for (let pass = 0; pass < 2; pass++) {
        for (let start = 0; start < SIZE; start += 300_000) {
          const end = Math.min(SIZE - 1, start + 299_999);
          const res = await request(target, { headers: { range: `bytes=${start}-${end}` } });
          expect(res.statusCode).toBe(206);
          expect(Buffer.from(await res.body.arrayBuffer()).equals(data.subarray(start, end + 1))).toBe(true);
          reads++;
        }
      }
      const failures = lines.filter((l) => /ENOSPC/.test(l));
      expect(failures.length).toBeGreaterThan(0);
      const first = JSON.parse(failures[0]!) as { msg: string; level: number };
      expect(first.msg).toMatch(/block write failed/);
      expect(first.level).toBeGreaterThanOrEqual(40);
      const stats = svc.stats();
      expect(stats.residentBytes).toBeLessThanOrEqual(1 << 20);
      // A write the full disk cut short is never kept as a (torn) block.
      expect(stats.corruptBlocks).toBe(0);
      report("disk-full", {
        reads,
        disk_bytes: 1 << 20,
        object_bytes: SIZE,
        resident_bytes: stats.residentBytes,
        enospc_log_lines: failures.length,
        log_line: first.msg,
      });
    } finally {
      await svc?.close();
    }
  },
);
