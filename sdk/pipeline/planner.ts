import { tableEntry } from "../../common/dataset-table/entry.js";
import { keyHashUtf8, pageShards } from "../../common/page-shards.js";
import { notStreamed, STREAMED_FORMATS } from "../../common/media-index/index.js";
import { type EntryColumns, HAS, KINDS } from "../../common/dataset-table/entry-columns.js";
import type { TableEntryV1 } from "../../common/schema/index.js";
import { relayedCode, SdkError, SdkErrorCode } from "../errors.js";
import { clipSpan, type ResolvedOptions } from "../options.js";
import { clipStarts, gopsOf, makePlan, type ClipPlan, type PlannedObject } from "../sampler/clip-plan.js";
import { IdRun, type PageObjects } from "../sampler/paged-plan.js";
import type { DatasetListing } from "../source/source.js";
import type { IndexCache } from "./index-cache.js";
import { orderedMap } from "./ordered-map.js";

/**
 * Exact clips that reach into the next GOP chain it into their run while the run opened fewer
 * than this many frames before: one run then spans about one 300-frame GOP at most (plus a GOP),
 * the length the shuffle's scatter is measured at, and short GOPs are not decoded twice at
 * every boundary a clip straddles.
 */
const CHAIN_FRAMES = 300;

/** An object that contributes no clips, and why. */
export interface SkippedObject {
  readonly key: string;
  readonly error: SdkError;
}

/** An object's report, its key in front as every skipped object's message starts. */
function skippedError(key: string, err: { code: string; message: string }): SdkError {
  return new SdkError(relayedCode(err.code), err.message.startsWith(key) ? err.message : `${key}: ${err.message}`);
}

/** What the planner reads of an entry: a TableEntryV1, or one row of a table's columns (`columnEntry`). */
type PlanEntry = Pick<TableEntryV1, "kind" | "frames" | "width" | "error"> & {
  readonly keyframes?: ArrayLike<number> | undefined;
};

/**
 * Clip starts (and GOP of each, for video) of one object from its table entry. Corrupt, empty,
 * unreadable objects and kinds not streamed contribute none and are reported in `skipped`.
 */
function startsOf(
  keyOf: () => string,
  e: PlanEntry,
  o: Sampling,
  skipped: SkippedObject[],
  id: number,
): Pick<PlannedObject, "starts" | "gops"> {
  if (e.kind === "video" && e.frames !== undefined && e.keyframes) {
    const starts = clipStarts(e.frames, e.keyframes, o);
    const chain = o.align === "exact" ? { span: clipSpan(o), frames: CHAIN_FRAMES } : undefined;
    return { starts, gops: gopsOf(starts, e.keyframes, chain) };
  }
  // One .npy or image is one sample; its dtype, layout or pixels are checked when it is read.
  if ((e.kind === "array" && e.frames !== undefined) || (e.kind === "image" && e.width !== undefined))
    return { starts: [0] };
  const key = keyOf();
  if (e.kind === "error")
    skipped[id] = {
      key,
      error: skippedError(key, e.error ?? { code: SdkErrorCode.IndexCorrupt, message: "corrupt object" }),
    };
  // Reported, never dropped without a word: bytes of no format ec reads, or an index that does not describe its kind.
  else
    skipped[id] = {
      key,
      error: skippedError(key, {
        code: SdkErrorCode.KindUnsupported,
        message: `${key} is ${e.kind === "other" ? "no format ec reads" : `a ${e.kind} its index does not describe`}; ec streams ${STREAMED_FORMATS}`,
      }),
    };
  return { starts: [] };
}

/** One planned object of a table: its clips, its key and etag read from the columns only when asked for. */
class TablePlanned implements PlannedObject {
  constructor(
    private readonly entries: EntryColumns,
    private readonly id: number,
    readonly starts: readonly number[],
    readonly gops?: readonly number[],
  ) {}
  get key(): string {
    return this.entries.key(this.id);
  }
  get etag(): string {
    return this.entries.etag(this.id);
  }
}

/** Row `id` of the columns as the planner reads it (the keyframes a view, no copy). */
function columnEntry(e: EntryColumns, id: number, kind: TableEntryV1["kind"]): PlanEntry {
  return { kind, frames: e.frames(id), keyframes: e.keyframes(id), width: e.width(id), error: e.error(id) };
}

const VIDEO = KINDS.indexOf("video");

type Sampling = Pick<ResolvedOptions, "frames" | "stride" | "hop" | "align"> & { readonly track?: number };

/** The clips of a table's columns: every row planned as planDataset plans it, runs of alike videos sharing arrays. */
function plannedRows(e: EntryColumns, o: Sampling, skipped: SkippedObject[], firstId = 0): PlannedObject[] {
  const objects: PlannedObject[] = [];
  let last: { id: number; clips: Pick<PlannedObject, "starts" | "gops"> } | undefined;
  for (let id = 0; id < e.length; id++) {
    const kind = e.kind(id);
    const clips =
      // Same frames and keyframes: the same clip starts.
      last && kind === "video" && e.sameFrames(last.id, id)
        ? last.clips
        : startsOf(() => e.key(id), columnEntry(e, id, kind), o, skipped, firstId + id);
    if (kind === "video" && clips.gops) last = { id, clips };
    objects.push(new TablePlanned(e, id, clips.starts, clips.gops));
  }
  return objects;
}

/**
 * A page's planned objects, each planned when first asked for: the order reaches a few hundred
 * of a window's objects before its first batch, whatever the page size. Objects that contribute
 * no clips (not a video with frames and keyframes) are planned, so reported, when the page is.
 */
class LazyRows {
  private readonly rows: (PlannedObject | undefined)[];
  /** The last video planned: a video encoded alike (same frames and keyframes) shares its arrays. */
  private last: { id: number; clips: Pick<PlannedObject, "starts" | "gops"> } | undefined;

  constructor(
    private readonly e: EntryColumns,
    private readonly o: Sampling,
    private readonly skipped: SkippedObject[],
    private readonly firstId: number,
  ) {
    this.rows = new Array<PlannedObject | undefined>(e.length);
    // A scan of the stored bytes: an entry picked is read (and its shard checked) through the accessors.
    const { kind, has } = e.flags;
    const both = HAS.frames | HAS.keyframes;
    for (let id = 0; id < e.length; id++) if (kind[id] !== VIDEO || (has[id]! & both) !== both) this.at(id);
  }

  get length(): number {
    return this.e.length;
  }

  at(id: number): PlannedObject {
    const got = this.rows[id];
    if (got) return got;
    const e = this.e;
    const kind = e.kind(id);
    const last = this.last;
    const clips =
      last && kind === "video" && e.sameFrames(last.id, id)
        ? last.clips
        : startsOf(() => e.key(id), columnEntry(e, id, kind), this.o, this.skipped, this.firstId + id);
    if (kind === "video" && clips.gops) this.last = { id, clips };
    const planned = new TablePlanned(e, id, clips.starts, clips.gops);
    this.rows[id] = planned;
    return planned;
  }
}

/**
 * One table page planned on its own, as a LazyPlan reads it: its objects' clips (as planDataset
 * plans them; each planned when first asked for, `objects.at(place)`) and its shards under the
 * page-local rule (common/page-shards.ts), as runs of places in the page: as the page stores
 * them (page format 4, at this shard target), else cut here (each key hashed from the page's
 * bytes). Objects that contribute no clips are reported in `skipped` under their dataset-wide
 * id (`firstId` + place), as the page is planned.
 *
 * @example
 * const plan = new LazyPlan(counts, async (k) => planTablePage(await readPage(k), firstIds[k], options, head.shardBytes, skipped));
 */
export function planTablePage(
  entries: EntryColumns,
  firstId: number,
  o: Sampling,
  shardBytes: number,
  skipped: SkippedObject[],
): { objects: PageObjects; shards: IdRun[] } {
  const objects = new LazyRows(entries, o, skipped, firstId);
  const stored = entries.shardStarts(shardBytes);
  if (stored) {
    const shards = new Array<IdRun>(stored.length);
    for (let s = 0; s < stored.length; s++)
      shards[s] = new IdRun(stored[s]!, (s + 1 < stored.length ? stored[s + 1]! : entries.length) - stored[s]!);
    return { objects, shards };
  }
  const { size: sizes, keys, keyEnd } = entries.columns;
  const page = {
    length: entries.length,
    key: (j: number) => entries.key(j),
    size: (j: number) => sizes[j]!,
    hash: (j: number) => keyHashUtf8(keys, j === 0 ? 0 : keyEnd[j - 1]!, keyEnd[j]!),
  };
  const shards = pageShards(page, shardBytes).map((s) => new IdRun(s.first, s.count));
  return { objects, shards };
}

/**
 * Lists every object's clips (one per image or .npy). From the dataset table when the listing
 * carries one: no index is read, and open() costs the same for any dataset size. Otherwise
 * each object's index is read and reduced to the same table entry, so both plans are equal.
 * Corrupt objects (kind "error") and kinds not streamed contribute no clips and are reported;
 * a failed index fetch throws, since ranks must agree on one plan. Indexes are fetched
 * `concurrency` at a time: without a table, planning is round trips to the edge
 * (bench/open-plan.ts).
 *
 * @example
 * const { plan, skipped } = await planDataset(listing, indexes, options);
 */
export async function planDataset(
  listing: DatasetListing,
  indexes: IndexCache,
  o: Sampling,
  concurrency = 64,
): Promise<{ plan: ClipPlan; skipped: SkippedObject[] }> {
  const skipped: SkippedObject[] = [];
  const objects: PlannedObject[] = [];
  // The table describes each object's first video track; another track is planned from the indexes.
  if (listing.entries && !o.track) {
    // Read from the columns, no entry object made. Videos encoded alike (same frame count and
    // keyframes) have the same clips: one pair of arrays serves a run of them.
    const rows = plannedRows(listing.entries, o, skipped);
    return { plan: makePlan(rows, listing.shards, o, listing.digest), skipped: skipped.filter(Boolean) };
  }
  const ids = Array.from({ length: listing.objects.length }, (_, i) => i);
  for await (const planned of orderedMap(ids, concurrency, async (id) => {
    const object = listing.objects.at(id)!;
    const { index, order } = await indexes.get(id, object);
    const why = notStreamed(index);
    if (why) {
      skipped[id] = { key: object.key, error: skippedError(object.key, why) };
      return { key: object.key, etag: object.etag, starts: [] };
    }
    // The index reduced to the table's entry (for the track asked for): both plans are one code path.
    const entry =
      order && index.video
        ? { ...tableEntry(index, order.keyframes), frames: order.decodeOf.length }
        : tableEntry(index);
    return { key: object.key, etag: object.etag, ...startsOf(() => object.key, entry, o, skipped, id) };
  })) {
    objects.push(planned);
  }
  // Indexes finish in any order; the listing's order makes the report (and open()'s error) the same every run.
  return { plan: makePlan(objects, listing.shards, o, listing.digest), skipped: skipped.filter(Boolean) };
}
