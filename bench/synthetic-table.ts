import { gunzipSync } from "node:zlib";
import { cutRuns, DIRECTORY_TARGET, directoryParts, encodeDirectory } from "../common/dataset-table/directory.js";
import { headOf, PAGE_TARGET, pageRefOf, type StoredPage, storePage } from "../common/dataset-table/generation.js";
import { DEFAULT_SHARD_TARGET_BYTES } from "../common/shards.js";
import type { TableEntryV1, TableHeadDirectoriesV1, TablePageRefV1 } from "../common/schema/index.js";
import type { TableStore } from "../common/table-client.js";

/**
 * A table entry as open-scale seeds its objects: a small video of 24 frames with a keyframe
 * every 6 and a 16-byte ETag unique to `i`. Benches that need millions of entries make them
 * with this instead of indexing videos.
 *
 * @example
 * const e = syntheticEntry("scale/o-0000001.mp4", 1);
 */
export function syntheticEntry(key: string, i: number): TableEntryV1 {
  return {
    key,
    size: 20_000 + (i % 97),
    etag: `"${((i * 2654435761) >>> 0).toString(16).padStart(8, "0")}${i.toString(16).padStart(24, "0")}"`,
    kind: "video",
    frames: 24,
    keyframes: [0, 6, 12, 18],
    codec: "h264",
    width: 64,
    height: 48,
  };
}

/**
 * A table generation of `objects` synthetic entries (syntheticEntry, keys `{root}/o-{i}.mp4`
 * in key order), built page by page with the publisher's own code (pageRefOf, storePage: the
 * page codec with the etags apart as pins; directory pages cut as a new table's, encodeDirectory;
 * headOf), without holding the table: each page is handed to `onPage` as it is made, to store
 * (or drop). Returns the unsigned head and the directory pages to store. What benches use for
 * a table of 10^7 objects, instead of uploading and indexing them.
 *
 * @example
 * const { head, directories } = await synthesizeGeneration({ root: "scale", objects: 1e7, shardBytes, now }, store);
 */
export async function synthesizeGeneration(
  o: {
    readonly root: string;
    readonly objects: number;
    readonly shardBytes: number;
    readonly now: number;
    readonly pageTarget?: number;
    readonly directoryTarget?: number;
  },
  onPage: (page: StoredPage, ref: TablePageRefV1) => Promise<void> | void,
): Promise<{ head: TableHeadDirectoriesV1; directories: StoredPage[] }> {
  const pageTarget = o.pageTarget ?? PAGE_TARGET;
  const pages = Math.ceil(o.objects / pageTarget);
  const digits = String(o.objects).length;
  const refs: TablePageRefV1[] = [];
  for (let p = 0; p < pages; p++) {
    const entries: TableEntryV1[] = [];
    for (let i = p * pageTarget; i < Math.min(o.objects, (p + 1) * pageTarget); i++)
      entries.push(syntheticEntry(`${o.root}/o-${String(i).padStart(digits, "0")}.mp4`, i));
    const ref = pageRefOf(`1-${p}`, entries, o.shardBytes);
    await onPage(await storePage(o.root, ref, entries, true, o.shardBytes), ref);
    refs.push(ref);
  }
  const runs = cutRuns(refs, directoryParts(refs.length, true, o.directoryTarget ?? DIRECTORY_TARGET));
  const directories = await Promise.all(runs.map((run, d) => encodeDirectory(o.root, `1-${pages + d}`, run)));
  return {
    head: headOf(
      o.root,
      1,
      o.now,
      o.shardBytes,
      directories.map((d) => d.ref),
    ),
    directories: directories.map((d) => ({ name: d.ref.name, gz: d.gz })),
  };
}

/**
 * synthesizeGeneration held in memory, as the benches that serve a table from memory use it:
 * every page and directory page (gzip) by name in `stored`, each page's pins by name in `pins`.
 *
 * @example
 * const { head, stored, pins } = await synthesizeInMemory(1e6);
 */
export async function synthesizeInMemory(objects: number): Promise<{
  head: TableHeadDirectoriesV1;
  directories: StoredPage[];
  stored: Map<string, Uint8Array>;
  pins: Map<string, Uint8Array>;
}> {
  const stored = new Map<string, Uint8Array>();
  const pins = new Map<string, Uint8Array>();
  const { head, directories } = await synthesizeGeneration(
    { root: "scale", objects, shardBytes: DEFAULT_SHARD_TARGET_BYTES, now: 0 },
    (page) => {
      stored.set(page.name, page.gz);
      if (page.pins) pins.set(page.name, page.pins);
    },
  );
  for (const d of directories) stored.set(d.name, d.gz);
  return { head, directories, stored, pins };
}

/**
 * A TableStore serving synthesizeInMemory's table: the signed head, each page and pins object
 * inflated as a fetch would give it; `pageDelayMs` makes each page arrive after a timer, as over
 * the network, so that several readers' walks interleave.
 *
 * @example
 * const table = await synthesizeInMemory(1e6);
 * const store = memoryStore(await signJson(table.head, signer), table);
 */
export function memoryStore(
  signed: unknown,
  table: { stored: Map<string, Uint8Array>; pins: Map<string, Uint8Array> },
  pageDelayMs = 0,
): TableStore {
  const inflate = (gz: Uint8Array) => {
    const raw = gunzipSync(gz);
    return new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
  };
  return {
    head: async () => signed,
    page: async (name) => {
      if (pageDelayMs > 0) await new Promise((r) => setTimeout(r, pageDelayMs));
      return inflate(table.stored.get(name)!);
    },
    pins: async (name) => inflate(table.pins.get(name)!),
  };
}
