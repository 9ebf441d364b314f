/**
 * Arguments for a row's child process, in a file when they are large. Linux refuses any one
 * argument over 128 KiB (MAX_ARG_STRLEN) with E2BIG, and the naive row's list of 1,024 clips,
 * each with its signed URL, is ~300 KB of JSON: inline, that row never started.
 */
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";

/** Writes `args` as JSON to `dir/name.json` and returns the one argument that names it (`@PATH`). */
export async function writeChildArgs(dir: string, name: string, args: unknown): Promise<string> {
  const file = join(dir, `${name}.json`);
  await writeFile(file, JSON.stringify(args));
  return `@${file}`;
}

/** A child's arguments: JSON inline, or `@PATH` of a file that holds it (writeChildArgs). */
export function readChildArgs<T>(arg: string | undefined): T {
  const text = arg?.startsWith("@") ? readFileSync(arg.slice(1), "utf8") : (arg ?? "{}");
  return JSON.parse(text) as T;
}
