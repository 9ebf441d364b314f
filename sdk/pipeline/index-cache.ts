import type { IndexV1 } from "../../common/schema/index.js";
import { frameOrder, type FrameOrder } from "../sampler/frame-order.js";
import type { DatasetObject, DatasetSource } from "../source/source.js";

/** An index with its presentation order worked out once. */
export interface PreparedIndex {
  readonly index: IndexV1;
  readonly order: FrameOrder | undefined;
}

/**
 * The index with the `track`-th video track (0-based) as its video, or an ERR_TRACK_NOT_FOUND
 * record when the object has fewer.
 *
 * @example
 * selectTrack(index, 1).video; // the object's second video track
 */
export function selectTrack(index: IndexV1, track: number): IndexV1 {
  if (track === 0 || !index.video) return index;
  const tracks = [index.video, ...(index.moreVideo ?? [])];
  const chosen = tracks[track];
  if (chosen) return { ...index, video: chosen };
  const { video: _video, moreVideo: _more, ...rest } = index;
  const message = `${index.key} has ${tracks.length} video track${tracks.length === 1 ? "" : "s"} but track ${track} (0-based) was asked for`;
  return { ...rest, kind: "error", error: { code: "ERR_TRACK_NOT_FOUND", message } };
}

/**
 * Indexes of recently used objects, bounded by count so a dataset of any size fits; a
 * miss refetches from the source (which caches them itself on the edge). `track` picks the
 * video track each prepared index streams.
 */
export class IndexCache {
  private readonly entries = new Map<number, Promise<PreparedIndex>>();
  constructor(
    private readonly source: DatasetSource,
    private readonly capacity = 512,
    private readonly track = 0,
  ) {}

  get(id: number, object: DatasetObject): Promise<PreparedIndex> {
    const hit = this.entries.get(id);
    if (hit) {
      this.entries.delete(id);
      this.entries.set(id, hit);
      return hit;
    }
    const p = this.source.index(object).then((raw) => {
      const index = selectTrack(raw, this.track);
      return { index, order: index.video ? frameOrder(index.video.samples, index.video.edit) : undefined };
    });
    // A failed fetch is not remembered: the next clip of the object tries again.
    p.catch(() => this.entries.delete(id));
    this.entries.set(id, p);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
    return p;
  }
}
