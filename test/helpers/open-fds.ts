import { readdir, readlink } from "node:fs/promises";

/** Open descriptors of this process that point into `root` (Linux: /proc/self/fd). */
export async function openUnder(root: string): Promise<number> {
  let n = 0;
  for (const fd of await readdir("/proc/self/fd")) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => "");
    if (target.startsWith(`${root}/`)) n++;
  }
  return n;
}
