import { spawn } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { createInterface } from "node:readline";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createRangeCache } from "../../origin-cache/index.js";
import { startRangeServer, type RangeServer } from "../helpers/range-server.js";
import { SLOT_HEADER } from "../../origin-cache/store/slot.js";
import { dirBytes, flipByte, objectBytes, slabSlots, tempDir } from "./fixtures.js";

const BLOCK = 1 << 20;
const objects = [0, 1, 2, 3].map((i) => ({
  path: `/v1/objects/crash-${i}.mp4`,
  data: objectBytes(6 * BLOCK + 1000 * i, `crash${i}`),
}));
let rs: RangeServer;
let buildDir: string;
let childJs: string;

beforeAll(async () => {
  rs = await startRangeServer();
  for (const o of objects) rs.put(o.path, o.data);
  // The child runs compiled JS: bundle its TypeScript once.
  buildDir = await mkdtemp(join(tmpdir(), "ec-crash-build-"));
  childJs = join(buildDir, "child.cjs");
  await build({
    entryPoints: [join(import.meta.dirname, "crash-child.ts")],
    bundle: true,
    platform: "node",
    format: "cjs",
    outfile: childJs,
    logLevel: "silent",
    // As scripts/bundle-engine.mjs: the addon's loader finds its build from import.meta.url
    // (the native upstream client, EC_UPSTREAM_CLIENT=native).
    define: { "import.meta.url": "__ecModuleUrl" },
    banner: { js: 'const __ecModuleUrl = require("node:url").pathToFileURL(__filename).href;' },
  });
});
afterAll(async () => {
  await rs.close();
  await rm(buildDir, { recursive: true, force: true });
});

// The child pulls on undici (the default) and on the native client, whose addon thread writes the
// pulled bytes into the buffers the store writes from.
for (const client of ["undici", "native"] as const)
  it(`after kill -9 during writes, a restarted cache serves only verified bytes (${client})`, async () => {
    const d = await tempDir();
    const maxBytes = 10 * (BLOCK + 4096);
    const child = spawn(process.execPath, [childJs], {
      env: {
        // The bundle lies outside the checkout: it finds the addon (for EC_UPSTREAM_CLIENT=native) by path.
        EC_NATIVE_PATH: join(import.meta.dirname, "..", "..", "native", "build", "Release", "ec_native.node"),
        ...process.env,
        EC_UPSTREAM_CLIENT: client,
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
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.once("exit", (_code, signal) => resolve(signal)),
    );
    // Kill while the second pass is evicting and rewriting blocks.
    for await (const line of createInterface({ input: child.stdout })) {
      const p = JSON.parse(line) as { round: number; misses: number };
      if (p.misses >= 30) break;
    }
    child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");
    expect(await dirBytes(d.path)).toBeLessThanOrEqual(maxBytes);

    // Also damage two surviving blocks the way a failing disk could: one header torn, one data bit flipped.
    const slots = await slabSlots(d.path);
    const ids = new Set(slots.map((s) => `${s.header.index}:${s.header.key}`));
    // Damage full blocks only, each the one copy of its block.
    const full = slots.filter(
      (s) =>
        s.header.dataLength === BLOCK &&
        slots.filter((t) => t.header.key === s.header.key && t.header.index === s.header.index).length === 1,
    );
    expect(full.length).toBeGreaterThanOrEqual(2);
    await flipByte(full[0]!.path, full[0]!.offset + 20);
    await flipByte(full[1]!.path, full[1]!.offset + SLOT_HEADER + 300_000);

    rs.resetCounts();
    // Reopened with room for every object, so verifying one object never evicts a survivor of another.
    const cache = await createRangeCache({
      upstreams: [rs.url],
      dir: d.path,
      maxBytes: 64 << 20,
      blockSize: BLOCK,
      logLevel: "silent",
      upstreamClient: client,
    });
    try {
      expect((await readdir(d.path)).sort()).toEqual([".ec-cache", "slabs"]);
      const survivors = cache.stats().blocks;
      // Every intact slot is indexed or, torn (the damaged header, a write the kill cut short), dropped at once.
      const atOpen = cache.stats().corruptBlocks;
      expect(atOpen).toBeGreaterThanOrEqual(1);
      expect(survivors + atOpen).toBe(ids.size);
      for (const o of objects) {
        for (let at = 0; at < o.data.length; at += BLOCK) {
          const len = Math.min(BLOCK, o.data.length - at);
          expect(
            Buffer.from(await cache.read(`${rs.url}${o.path}?sig=z`, at, len)).equals(o.data.subarray(at, at + len)),
          ).toBe(true);
        }
      }
      const s = cache.stats();
      // Every survivor was served or, failing its checksum on this first read (the flipped one), refetched.
      expect(s.hits + (s.corruptBlocks - atOpen)).toBe(survivors);
      expect(s.corruptBlocks - atOpen).toBeGreaterThanOrEqual(1);
    } finally {
      await cache.close();
      await d.remove();
    }
  });
