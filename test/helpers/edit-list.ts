/**
 * MP4 files whose edit list (elst) does what real recordings' do: a stream copy cut
 * (`-ss … -c copy`, the GOP's leading frames kept and skipped by the edit), a delay (an empty
 * edit, from `-itsoffset`), and edits rewritten in place (shorter, or at another rate).
 */
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * `ffmpeg [-itsoffset D] -ss SS [-t T] -i src -c copy` into `dir/name`; returns its path.
 *
 * @example
 * const cut = await cutCopy(src, dir, { ss: 2.5, name: "cut.mp4" });
 */
export async function cutCopy(
  src: string,
  dir: string,
  o: { ss?: number; t?: number; itsoffset?: number; name: string },
): Promise<string> {
  const out = join(dir, o.name);
  await run("ffmpeg", [
    "-hide_banner",
    "-loglevel",
    "error",
    "-y",
    ...(o.itsoffset !== undefined ? ["-itsoffset", String(o.itsoffset)] : []),
    ...(o.ss !== undefined ? ["-ss", String(o.ss)] : []),
    ...(o.t !== undefined ? ["-t", String(o.t)] : []),
    "-i",
    src,
    "-map",
    "0",
    "-c",
    "copy",
    out,
  ]);
  return out;
}

/**
 * Rewrites entry `entry` of the first elst (version 0) in place: its segment duration (movie
 * timescale) and/or media rate; the file's layout is unchanged.
 *
 * @example
 * await patchEdit(cut, out, { duration: 1000 }); // show one second from the edit's start
 */
export async function patchEdit(
  src: string,
  out: string,
  o: { entry?: number; duration?: number; rate?: number },
): Promise<string> {
  const bytes = Buffer.from(await readFile(src));
  const at = bytes.indexOf("elst");
  if (at < 0 || bytes[at + 4] !== 0) throw new Error(`${src} has no version-0 elst`);
  const count = bytes.readUInt32BE(at + 8);
  const entry = o.entry ?? 0;
  if (entry >= count) throw new Error(`${src}'s elst has ${count} entries, not ${entry + 1}`);
  const e = at + 12 + entry * 12;
  if (o.duration !== undefined) bytes.writeUInt32BE(o.duration, e);
  if (o.rate !== undefined) bytes.writeInt16BE(o.rate, e + 8);
  await writeFile(out, bytes);
  return out;
}
