import type { IndexV1 } from "../../common/schema/index.js";
import { frameOrder, type FrameOrder } from "../sampler/frame-order.js";
import type { DatasetObject, DatasetSource } from "../source/source.js";

/** An index with its presentation order worked out once. */
export interface PreparedIndex {
  readonly index: IndexV1;
  readonly order: FrameOrder | undefined;
}

/**
 * Indexes of recently used objects, bounded by count so a dataset of any size fits; a
 * miss refetches from the source (which caches them itself on the edge).
 */
export class IndexCache {
  private readonly entries = new Map<number, Promise<PreparedIndex>>();
  constructor(private readonly source: DatasetSource, private readonly capacity = 512) {}

  get(id: number, object: DatasetObject): Promise<PreparedIndex> {
    const hit = this.entries.get(id);
    if (hit) {
      this.entries.delete(id);
      this.entries.set(id, hit);
      return hit;
    }
    const p = this.source.index(object).then((index) => ({ index, order: index.video ? frameOrder(index.video.samples, index.video.edit) : undefined }));
    // A failed fetch is not remembered: the next clip of the object tries again.
    p.catch(() => this.entries.delete(id));
    this.entries.set(id, p);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
    return p;
  }
}
