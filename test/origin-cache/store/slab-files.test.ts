import { readdir, readlink } from "node:fs/promises";
import { afterEach, expect, it } from "vitest";
import { SlabFiles } from "../../../origin-cache/store/slab-files.js";
import { tempDir } from "../fixtures.js";

const SLOT = 8192;
const dirs: { remove: () => Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => d.remove()));
});

/** Descriptors of this process open on `path`. */
async function openOn(path: string): Promise<string[]> {
  const fds = await readdir("/proc/self/fd");
  const targets = await Promise.all(fds.map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => "")));
  return targets.filter((t) => t === path);
}

async function slabFiles(): Promise<SlabFiles> {
  const d = await tempDir();
  dirs.push(d);
  return new SlabFiles({ dir: d.path, slotBytes: SLOT, slotsPerSlab: 4, slots: 8 });
}

it("fails reads, writes and syncs after close with EBADF and leaves no slab open", async () => {
  const slabs = await slabFiles();
  await slabs.write(0, [Buffer.alloc(SLOT, 1)]);
  await slabs.write(4, [Buffer.alloc(SLOT, 2)]);
  expect(await openOn(slabs.pathOf(0))).toHaveLength(1);
  await slabs.close();
  const buf = Buffer.alloc(16);
  await expect(slabs.read(0, buf, 0, 16)).rejects.toMatchObject({ code: "EBADF" });
  await expect(slabs.read(4, buf, 0, 16)).rejects.toMatchObject({ code: "EBADF" });
  await expect(slabs.readAt(0, buf, 0, 16, 0)).rejects.toMatchObject({ code: "EBADF" });
  await expect(slabs.write(1, [Buffer.alloc(SLOT)])).rejects.toMatchObject({ code: "EBADF" });
  await expect(slabs.sync([0])).rejects.toMatchObject({ code: "EBADF" });
  expect(await openOn(slabs.pathOf(0))).toEqual([]);
  expect(await openOn(slabs.pathOf(1))).toEqual([]);
});

it("closes a slab whose open was still running when close began, and no read takes it after", async () => {
  const slabs = await slabFiles();
  const racing = slabs.read(4, Buffer.alloc(16), 0, 16).catch((err: { code?: string }) => err.code);
  await slabs.close();
  await racing;
  await expect(slabs.readAt(4, Buffer.alloc(16), 0, 16, 0)).rejects.toMatchObject({ code: "EBADF" });
  expect(await openOn(slabs.pathOf(1))).toEqual([]);
});
