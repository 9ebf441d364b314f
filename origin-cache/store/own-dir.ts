/**
 * The cache's directory is its own: made (or first taken) by the cache, marked so by a file it
 * writes then, readable by its own user alone (or, where a deployment asks, by the directory's
 * group too). The cache refuses a directory that holds anything else, so `--dir /scratch` never
 * costs anyone a file: the cache removes nothing it did not make.
 */
import { chmod, mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CacheDirError } from "../errors.js";

/** The file that marks a directory as a cache's own. */
export const OWN_MARKER = ".ec-cache";
const SLABS = "slabs";
/** A slab's name: the cache made it (slot size, then number). */
export const SLAB_NAME = /^(\d+)-(\d+)\.slab$/;

export interface DirModes {
  readonly dir: number;
  readonly file: number;
}

/** The modes of the cache's directories and files: the owner's alone, or the group's to read too. */
export function dirModes(groupRead: boolean): DirModes {
  // setgid on the directories: files made in them take the directory's group, the one to share with.
  return groupRead ? { dir: 0o2750, file: 0o640 } : { dir: 0o700, file: 0o600 };
}

/**
 * Makes `dir` (and its slabs folder) the cache's own, or checks that it is: an empty or new
 * directory is marked; a marked one is taken as is; one holding only slab files (a cache from
 * before the marker) is marked; anything else is ERR_CACHE_DIR_FOREIGN. Sets the modes.
 */
export async function ownDir(dir: string, modes: DirModes): Promise<string> {
  await mkdir(dir, { recursive: true, mode: modes.dir });
  const entries = await readdir(dir);
  if (!entries.includes(OWN_MARKER)) {
    const foreign = entries.filter((e) => e !== SLABS);
    const oldSlabs = entries.includes(SLABS) ? await readdir(join(dir, SLABS)).catch(() => null) : [];
    const strays = oldSlabs === null ? [SLABS] : oldSlabs.filter((n) => !SLAB_NAME.test(n)).map((n) => `${SLABS}/${n}`);
    if (foreign.length > 0 || strays.length > 0) throw new CacheDirError(dir, [...foreign, ...strays]);
    // Empty: the directory's bytes stay the store's (the bound counts every file).
    await writeFile(join(dir, OWN_MARKER), "", { mode: modes.file, flag: "wx" });
  }
  await chmod(dir, modes.dir);
  const slabs = join(dir, SLABS);
  await mkdir(slabs, { recursive: true, mode: modes.dir });
  await chmod(slabs, modes.dir);
  return slabs;
}
