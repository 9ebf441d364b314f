import type { ClipLabels } from "../label-clip.js";
import { sidecarPath, type LabelCache, type LabelCacheKey } from "./label-cache.js";

/**
 * In-process labels, bounded by entry count (oldest out first): later epochs of this process
 * reuse them without any I/O.
 *
 * @example
 * const cache = new MemoryLabelCache(10_000);
 */
export class MemoryLabelCache implements LabelCache {
  readonly #entries = new Map<string, ClipLabels>();
  constructor(readonly maxEntries = 16_384) {}

  async get(k: LabelCacheKey): Promise<ClipLabels | undefined> {
    const id = sidecarPath(k);
    return id === undefined ? undefined : this.#entries.get(id);
  }

  async put(k: LabelCacheKey, labels: ClipLabels): Promise<void> {
    const id = sidecarPath(k);
    if (id === undefined) return;
    this.#entries.delete(id);
    this.#entries.set(id, labels);
    while (this.#entries.size > this.maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
  }

  get size(): number {
    return this.#entries.size;
  }
}
