/**
 * The cache's directory is its own: readable by its user alone (or its group, when asked), marked
 * as the cache's when made, and a directory holding anything else is refused untouched: the cache
 * never removes a file it did not make.
 */
import { mkdir, readdir, rm, stat, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startCache } from "../../origin-cache/index.js";
import { OWN_MARKER } from "../../origin-cache/store/own-dir.js";
import { main } from "../../sdk/cli/cache.js";
import { startRangeServer, type RangeServer } from "../helpers/range-server.js";
import { objectBytes, tempDir, until } from "./fixtures.js";

const BLOCK = 16 << 10;
const PATH = "/v1/objects/dir.bin";
const data = objectBytes(4 * BLOCK, "cache-dir");
let rs: RangeServer;
let root: { path: string; remove: () => Promise<void> };

beforeAll(async () => {
  rs = await startRangeServer();
  rs.put(PATH, data);
  root = await tempDir();
});
afterAll(async () => {
  await rs.close();
  await root.remove();
});

const url = `${PATH}?exp=9999999999&sig=x`;

async function fill(dir: string, opts: { groupRead?: boolean } = {}): Promise<number> {
  const svc = await startCache({
    upstreams: [rs.url],
    dir,
    maxBytes: 1 << 20,
    blockSize: BLOCK,
    logLevel: "silent",
    ...opts,
  });
  try {
    const got = await svc.cache.read(`${rs.url}${url}`, 0, data.length);
    expect(Buffer.from(got).equals(data)).toBe(true);
    await until(() => svc.stats().blocks === 4, "every block stored");
    return svc.stats().blocks;
  } finally {
    await svc.close();
  }
}

const mode = async (p: string): Promise<number> => (await stat(p)).mode & 0o7777;

async function files(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).sort();
}

describe("the cache's directory", () => {
  it("is readable by the cache's user alone: directories 0700, files 0600", async () => {
    const dir = join(root.path, "new", "cache");
    await fill(dir);
    expect(await mode(dir)).toBe(0o700);
    expect(await mode(join(dir, "slabs"))).toBe(0o700);
    expect(await mode(join(dir, OWN_MARKER))).toBe(0o600);
    const slabs = await readdir(join(dir, "slabs"));
    expect(slabs.length).toBeGreaterThan(0);
    for (const s of slabs) expect(await mode(join(dir, "slabs", s)), s).toBe(0o600);
  });

  it("lets the directory's group read it when asked, and narrows a slab made wider before", async () => {
    const dir = join(root.path, "group");
    await fill(dir, { groupRead: true });
    expect(await mode(dir)).toBe(0o2750);
    const [slab] = await readdir(join(dir, "slabs"));
    expect(await mode(join(dir, "slabs", slab!))).toBe(0o640);
    await fill(dir);
    expect(await mode(dir)).toBe(0o700);
    expect(await mode(join(dir, "slabs", slab!))).toBe(0o600);
  });

  it("refuses a directory holding files it did not make, and removes none of them", async () => {
    const dir = join(root.path, "scratch");
    await mkdir(join(dir, "tmp"), { recursive: true });
    await mkdir(join(dir, "blocks"));
    await mkdir(join(dir, "slabs"));
    await writeFile(join(dir, "tmp", "keep.txt"), "mine");
    await writeFile(join(dir, "blocks", "keep.bin"), "mine");
    await writeFile(join(dir, "slabs", "notes.txt"), "mine");
    await writeFile(join(dir, "results.csv"), "mine");
    const before = await files(dir);
    await expect(startCache({ upstreams: [rs.url], dir, maxBytes: 1 << 20, logLevel: "silent" })).rejects.toMatchObject(
      { code: "ERR_CACHE_DIR_FOREIGN" },
    );
    // `ec cache --dir` says so and exits non-zero.
    const out: string[] = [];
    const spy = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      out.push(String(chunk));
      return true;
    });
    let code: number;
    try {
      code = await main(["--upstream", rs.url, "--dir", dir, "--max-bytes", "1M", "--listen", "127.0.0.1:0"]);
    } finally {
      spy.mockRestore();
    }
    expect(code).not.toBe(0);
    expect(out.join("")).toContain("ERR_CACHE_DIR_FOREIGN");
    expect(await files(dir)).toEqual(before);
  });

  it("reopens its own directory with its blocks, takes one from before the marker, and leaves a stray file", async () => {
    const dir = join(root.path, "own");
    const blocks = await fill(dir);
    expect(blocks).toBe(4);
    await writeFile(join(dir, "slabs", "stray.txt"), "not the cache's");
    await fill(dir);
    expect(await readdir(join(dir, "slabs"))).toContain("stray.txt");
    // A store from before the marker holds slab files alone: it is taken, blocks and all.
    await unlink(join(dir, "slabs", "stray.txt"));
    await unlink(join(dir, OWN_MARKER));
    const svc = await startCache({ upstreams: [rs.url], dir, maxBytes: 1 << 20, blockSize: BLOCK, logLevel: "silent" });
    try {
      expect(svc.stats().blocks).toBe(4);
    } finally {
      await svc.close();
    }
    expect(await readdir(dir)).toContain(OWN_MARKER);
    await rm(dir, { recursive: true });
  });
});
