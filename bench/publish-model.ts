/**
 * One publisher generation timed in Node's V8 (the model bench/publish-scale.ts and
 * bench/publish-workerd.ts share): MAX_CHANGES_PER_GENERATION listed changes applied to a table
 * of P full pages with the code the Worker's publish consumer runs, R2 replaced by the bytes it
 * would return.
 */
import { chooseChanges, directoriesInReach } from "../common/dataset-table/budget.js";
import { gunzip } from "../common/dataset-table/digest.js";
import {
  cutRuns,
  decodeDirectory,
  DIRECTORY_TARGET,
  directoryParts,
  encodeDirectory,
} from "../common/dataset-table/directory.js";
import {
  buildGeneration,
  encodePage,
  headOf,
  PAGE_TARGET,
  pageOf,
  pageSummary,
} from "../common/dataset-table/generation.js";
import { decodePageBytes } from "../common/dataset-table/page-codec.js";
import { signJson, type ManifestSigner } from "../common/manifest-sign.js";
import { countPageShards } from "../common/page-shards.js";
import { SignedManifestV1, TableEntryV1, TableHeadV1, type TablePageRefV1 } from "../common/schema/index.js";
import { DEFAULT_SHARD_TARGET_BYTES } from "../common/shards.js";
import { seededRng } from "../sdk/sampler/rng.js";
import { syntheticEntry } from "./synthetic-table.js";

/** edge/table/publish.ts's constants (not imported: edge/ builds against the Worker's types). */
export const LIST_CALLS = 10;
export const MAX_CHANGES_PER_GENERATION = LIST_CALLS * 1000;
export const GENERATION_SUBREQUESTS = 400;
/** Per list call a list and a delete, one list to wrap the sweep, the sweep's get and put, the head read and three puts. */
const FIXED = 2 * LIST_CALLS + 7;
/** Page p holds the even slots; a spread change takes an odd slot of some page, an append a page after the last. */
const keyOf = (p: number, slot: number) => `scale/o-${String(p).padStart(6, "0")}-${String(slot).padStart(5, "0")}.mp4`;
const pageEntries = (p: number) =>
  Array.from({ length: PAGE_TARGET }, (_, s) => syntheticEntry(keyOf(p, 2 * s), p * PAGE_TARGET + s));

export interface Measured {
  cpu_ms: number;
  pages_read: number;
  pages_written: number;
  directories_read: number;
  directories_written: number;
  head_kb: number;
  directory_kb: number;
  subrequests: number;
  puts: number;
  /** Of the listed changes, those the budget took into this generation. */
  changes: number;
}

/** The previous generation of `pages` full pages: its head and directory pages (bodies), refs only for pages. */
async function previousOf(pages: number, signer: ManifestSigner) {
  const one = pageEntries(0);
  const summary = {
    ...pageSummary(one),
    shards: countPageShards(
      one.map((e) => e.key),
      one.map((e) => e.size),
      DEFAULT_SHARD_TARGET_BYTES,
    ),
  };
  const refs: TablePageRefV1[] = Array.from({ length: pages }, (_, p) => ({
    name: `1-${p}`,
    first: keyOf(p, 0),
    last: keyOf(p, 2 * (PAGE_TARGET - 1)),
    count: PAGE_TARGET,
    bytes: PAGE_TARGET * 20_048,
    sha256: "x".repeat(43),
    ...summary,
    pins: "y".repeat(43),
  }));
  const dirs = await Promise.all(
    cutRuns(refs, directoryParts(pages, true)).map((run, d) => encodeDirectory("scale", `1-${pages + d}`, run)),
  );
  const head = headOf(
    "scale",
    1,
    0,
    DEFAULT_SHARD_TARGET_BYTES,
    dirs.map((d) => d.ref),
  );
  return {
    head,
    bodies: new Map(dirs.map((d) => [d.ref.name, d.gz])),
    signed: JSON.stringify(await signJson(head, signer)),
  };
}

/** One generation of MAX_CHANGES_PER_GENERATION listed changes on a table of `pages` full pages. */
export async function generation(
  pages: number,
  pattern: "append" | "spread",
  signer: ManifestSigner,
  round: number,
): Promise<Measured> {
  const rng = seededRng(round, pages, pattern);
  const marks: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < MAX_CHANGES_PER_GENERATION; i++) {
    const [p, slot] =
      pattern === "append"
        ? [pages + Math.floor(i / PAGE_TARGET), 2 * (i % PAGE_TARGET)]
        : [Math.floor(rng() * pages), 2 * Math.floor(rng() * PAGE_TARGET) + 1];
    const key = keyOf(p, slot);
    if (seen.has(key)) continue;
    seen.add(key);
    marks.push(JSON.stringify(syntheticEntry(key, 1e9 + i)));
  }
  const prev = await previousOf(pages, signer);
  // Bodies of the pages read, made when first read (R2 would return them): their making is not counted.
  const bodies = new Map<string, Uint8Array>(prev.bodies);
  let making = 0;
  const body = async (name: string) => {
    if (!bodies.has(name)) {
      const m0 = process.cpuUsage();
      bodies.set(
        name,
        (await encodePage("scale", pageEntries(Number(name.split("-")[1])), { shardBytes: DEFAULT_SHARD_TARGET_BYTES }))
          .gz,
      );
      const m = process.cpuUsage(m0);
      making += (m.user + m.system) / 1000;
    }
    return bodies.get(name)!;
  };
  // The pages the generation will read, made first: mergePages reads several at once, so making
  // them on first read would overlap the timed work and could not be subtracted from it.
  {
    const h = TableHeadV1.parse(JSON.parse(SignedManifestV1.parse(JSON.parse(prev.signed)).payload));
    const listedKeys = marks.map((m) => (JSON.parse(m) as { key: string }).key);
    const r = directoriesInReach(h, listedKeys, GENERATION_SUBREQUESTS - FIXED, DIRECTORY_TARGET);
    const ds = h.version === 2 ? h.directories : [];
    const refs = (
      await Promise.all(r.directories.map(async (d) => decodeDirectory(await gunzip(bodies.get(ds[d]!.name)!))))
    ).flat();
    const picked = chooseChanges(
      refs,
      r.keys.map((key) => ({ key, read: false })),
      GENERATION_SUBREQUESTS - FIXED - r.reserved,
      PAGE_TARGET,
      true,
    );
    if (refs.length > 0) for (const key of picked.keys) await body(refs[pageOf(refs, key)]!.name);
    making = 0;
  }
  let pagesRead = 0;
  let dirsRead = 0;
  const c0 = process.cpuUsage();
  // What publishTable and writeGeneration compute, in order, with R2 replaced by the bytes it would return.
  const head = TableHeadV1.parse(JSON.parse(SignedManifestV1.parse(JSON.parse(prev.signed)).payload));
  const listed = new Map(marks.map((m) => TableEntryV1.parse(JSON.parse(m))).map((e) => [e.key, e]));
  const reach = directoriesInReach(head, [...listed.keys()], GENERATION_SUBREQUESTS - FIXED, DIRECTORY_TARGET);
  const dirs = head.version === 2 ? head.directories : [];
  const loaded = new Map<string, TablePageRefV1[]>();
  for (const d of reach.directories) {
    dirsRead++;
    loaded.set(dirs[d]!.name, decodeDirectory(await gunzip(bodies.get(dirs[d]!.name)!)));
  }
  const chosen = chooseChanges(
    [...loaded.values()].flat(),
    reach.keys.map((key) => ({ key, read: false })),
    GENERATION_SUBREQUESTS - FIXED - reach.reserved,
    PAGE_TARGET,
    true,
  );
  const changes = new Map(chosen.keys.map((key) => [key, listed.get(key)!]));
  const next = await buildGeneration(
    head,
    changes,
    async (ref) => (pagesRead++, decodePageBytes(await gunzip(await body(ref.name))).entries.entries()),
    {
      root: "scale",
      shardBytes: DEFAULT_SHARD_TARGET_BYTES,
      now: 1,
      pinsApart: true,
      directory: async (ref) => loaded.get(ref.name)!,
    },
  );
  const signed = JSON.stringify(await signJson(next.head, signer));
  const c = process.cpuUsage(c0);
  const newDirs = new Set(next.head.directories.map((d) => d.name));
  const dirBodies = next.pages.filter((p) => newDirs.has(p.name));
  return {
    cpu_ms: (c.user + c.system) / 1000 - making,
    pages_read: pagesRead,
    pages_written: next.pages.length - dirBodies.length,
    directories_read: dirsRead,
    directories_written: dirBodies.length,
    head_kb: signed.length / 1024,
    directory_kb: Math.max(0, ...dirBodies.map((d) => d.gz.length)) / 1024,
    subrequests: FIXED + reach.reserved + chosen.subrequests,
    puts: next.pages.reduce((n, p) => n + (p.pins ? 2 : 1), 0) + 3,
    changes: changes.size,
  };
}
