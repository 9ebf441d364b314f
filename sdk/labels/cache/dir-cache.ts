import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { LabelSidecarV1 } from "../../../common/schema/labels-v1.js";
import type { ClipLabels } from "../label-clip.js";
import { sidecarPath, type LabelCache, type LabelCacheKey } from "./label-cache.js";

/**
 * Sidecars in a local directory (`<dir>/_ec/labels/…json`), shared by every rank of a host.
 * Written to a temp name and renamed, so a reader never sees half a file.
 *
 * @example
 * const cache = new DirLabelCache("/var/cache/ec");
 */
export class DirLabelCache implements LabelCache {
  constructor(readonly dir: string) {}

  #file(k: LabelCacheKey): string | undefined {
    const p = sidecarPath(k);
    return p === undefined ? undefined : join(this.dir, "_ec", "labels", `${p}.json`);
  }

  async get(k: LabelCacheKey): Promise<ClipLabels | undefined> {
    const file = this.#file(k);
    if (!file) return undefined;
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch {
      return undefined;
    }
    // A sidecar that does not parse is a miss: the clip is labeled again and the file replaced.
    const parsed = LabelSidecarV1.safeParse(safeJson(text));
    return parsed.success ? parsed.data.labels : undefined;
  }

  async put(k: LabelCacheKey, labels: ClipLabels): Promise<void> {
    const file = this.#file(k);
    if (!file) return;
    await mkdir(dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    const sidecar: LabelSidecarV1 = { version: 1, ...k, labels };
    await writeFile(tmp, JSON.stringify(sidecar));
    await rename(tmp, file);
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
