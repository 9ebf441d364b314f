import { spawn } from "node:child_process";
import { statSync } from "node:fs";
import { mkdtemp, open, readdir, rm, truncate } from "node:fs/promises";
import { createInterface } from "node:readline";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createRangeCache } from "../../origin-cache/index.js";
import { startRangeServer, type RangeServer } from "../helpers/range-server.js";
import { dirBytes, objectBytes, tempDir } from "./fixtures.js";

const BLOCK = 1 << 20;
const objects = [0, 1, 2, 3].map((i) => ({ path: `/v1/objects/crash-${i}.mp4`, data: objectBytes(6 * BLOCK + 1000 * i, `crash${i}`) }));
let rs: RangeServer;
let buildDir: string;
let childJs: string;

beforeAll(async () => {
  rs = await startRangeServer();
  for (const o of objects) rs.put(o.path, o.data);
  // The child runs compiled JS: bundle its TypeScript once.
  buildDir = await mkdtemp(join(tmpdir(), "ec-crash-build-"));
  childJs = join(buildDir, "child.cjs");
  await build({ entryPoints: [join(import.meta.dirname, "crash-child.ts")], bundle: true, platform: "node", format: "cjs", outfile: childJs, logLevel: "silent" });
});
afterAll(async () => {
  await rs.close();
  await rm(buildDir, { recursive: true, force: true });
});

async function blockFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const sub of await readdir(join(dir, "blocks"))) for (const f of await readdir(join(dir, "blocks", sub))) out.push(join(dir, "blocks", sub, f));
  return out.sort();
}

it("after kill -9 during writes, a restarted cache serves only verified bytes", async () => {
  const d = await tempDir();
  const maxBytes = 10 * (BLOCK + 4096);
  const child = spawn(process.execPath, [childJs], {
    env: {
      ...process.env,
      EC_CRASH_CHILD: JSON.stringify({
        upstream: rs.url,
        dir: d.path,
        maxBytes,
        blockSize: BLOCK,
        objects: objects.map((o) => ({ url: `${rs.url}${o.path}?sig=z`, size: o.data.length })),
      }),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
  // Kill while the second pass is evicting and rewriting blocks.
  for await (const line of createInterface({ input: child.stdout })) {
    const p = JSON.parse(line) as { round: number; misses: number };
    if (p.misses >= 30) break;
  }
  child.kill("SIGKILL");
  expect(await exited).toBe("SIGKILL");
  expect(await dirBytes(d.path)).toBeLessThanOrEqual(maxBytes);

  // Also damage two surviving blocks the way a failing disk could: one cut short, one bit flipped.
  const files = await blockFiles(d.path);
  // Damage full blocks only: a flip past the end of a short last block would just grow the file.
  const full = files.filter((f) => statSync(f).size === 4096 + BLOCK);
  expect(full.length).toBeGreaterThanOrEqual(2);
  await truncate(full[0] as string, 4096 + 1000);
  const fh = await open(full[1] as string, "r+");
  const b = Buffer.alloc(1);
  await fh.read(b, 0, 1, 4096 + 300_000);
  await fh.write(Buffer.from([(b[0] as number) ^ 0x01]), 0, 1, 4096 + 300_000);
  await fh.close();

  rs.resetCounts();
  // Reopened with room for every object, so verifying one object never evicts a survivor of another.
  const cache = await createRangeCache({ upstreams: [rs.url], dir: d.path, maxBytes: 64 << 20, blockSize: BLOCK, logLevel: "silent" });
  try {
    expect(await readdir(join(d.path, "tmp"))).toEqual([]);
    const survivors = cache.stats().blocks;
    expect(survivors).toBe(files.length - 1); // the cut-short block is gone at once
    for (const o of objects) {
      for (let at = 0; at < o.data.length; at += BLOCK) {
        const len = Math.min(BLOCK, o.data.length - at);
        expect(Buffer.from(await cache.read(`${rs.url}${o.path}?sig=z`, at, len)).equals(o.data.subarray(at, at + len))).toBe(true);
      }
    }
    const s = cache.stats();
    expect(s.hits).toBe(survivors - 1); // every intact survivor served; the flipped one refetched
    expect(s.corruptBlocks).toBeGreaterThanOrEqual(2); // both damaged blocks were caught, not served
  } finally {
    await cache.close();
    await d.remove();
  }
});
