/**
 * What a `--keep` directory of open-scale holds for one size, read from its `seeded.json`
 * (written last, when seeding finished): reuse it, rewrite only its table (another page
 * format), or seed it again — and, for the last two, the line that says so on stderr before
 * minutes of work start, so a rerun after a killed seed does not look like a hang.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

export interface SeedMark {
  readonly objects: number;
  readonly seconds: number;
  readonly pageFormat?: number;
}

export type KeptSeed =
  | { readonly kind: "reuse"; readonly mark: SeedMark }
  | { readonly kind: "retable"; readonly mark: SeedMark; readonly notice: string }
  | { readonly kind: "reseed"; readonly notice: string };

/**
 * @example
 * const kept = await keptSeed("/tmp/keep/n50000", 50000, 2);
 * if (kept.kind !== "reuse") process.stderr.write(kept.notice);
 */
export async function keptSeed(dir: string, objects: number, pageFormat: number): Promise<KeptSeed> {
  const markFile = join(dir, "seeded.json");
  const text = await readFile(markFile, "utf8").catch(() => undefined);
  let mark: SeedMark | undefined;
  try {
    mark = text === undefined ? undefined : (JSON.parse(text) as SeedMark);
  } catch {
    mark = undefined;
  }
  const tail = `: seeding ${objects.toLocaleString("en-US")} objects again (minutes at 50,000)\n`;
  if (mark === undefined) {
    const entries = await readdir(dir).catch(() => undefined);
    const found =
      entries === undefined
        ? `${dir} does not exist`
        : entries.length === 0
          ? `${dir} is empty`
          : text === undefined
            ? `${dir} holds ${entries.sort().join(", ")} but no seeded.json (a seed that did not finish)`
            : `${markFile} is not JSON`;
    return { kind: "reseed", notice: `[open-scale] ${found}${tail}` };
  }
  if (mark.objects !== objects)
    return {
      kind: "reseed",
      notice: `[open-scale] ${markFile} records ${mark.objects} objects, not ${objects}${tail}`,
    };
  if ((mark.pageFormat ?? 1) !== pageFormat)
    return {
      kind: "retable",
      mark,
      notice: `[open-scale] ${markFile} records table page format ${mark.pageFormat ?? 1}, not ${pageFormat}: rewriting the table of ${objects.toLocaleString("en-US")} objects, keeping the objects\n`,
    };
  return { kind: "reuse", mark };
}
