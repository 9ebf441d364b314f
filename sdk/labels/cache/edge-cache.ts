import { LabelSidecarV1 } from "../../../common/schema/labels-v1.js";
import { LabelCacheError } from "../errors.js";
import type { ClipLabels } from "../label-clip.js";
import { sidecarPath, type LabelCache, type LabelCacheKey } from "./label-cache.js";

export interface EdgeLabelCacheOptions {
  /** The edge's origin, e.g. "https://edge.example" (a dataset URL's origin works). */
  readonly edge: string;
  /** Bearer token for `/v1/labels`. */
  readonly token: string;
  readonly fetch?: typeof fetch;
}

/**
 * Label sidecars kept by the edge under `_ec/labels/` (route `/v1/labels/…`), so later epochs
 * and every rank on every host reuse them.
 *
 * @example
 * const cache = new EdgeLabelCache({ edge: "https://edge.example", token: process.env.EC_TOKEN! });
 */
export class EdgeLabelCache implements LabelCache {
  readonly #base: string;
  readonly #headers: Record<string, string>;
  readonly #fetch: typeof fetch;

  constructor(o: EdgeLabelCacheOptions) {
    this.#base = `${new URL(o.edge).origin}/v1/labels/`;
    this.#headers = { authorization: `Bearer ${o.token}` };
    this.#fetch = o.fetch ?? fetch;
  }

  async get(k: LabelCacheKey): Promise<ClipLabels | undefined> {
    const path = sidecarPath(k);
    if (!path) return undefined;
    const res = await this.#fetch(this.#base + path, { headers: this.#headers });
    if (res.status === 404) {
      await res.body?.cancel();
      return undefined;
    }
    if (!res.ok) throw new LabelCacheError(`GET ${path} answered ${res.status}: ${await res.text()}`);
    const parsed = LabelSidecarV1.safeParse(await res.json());
    if (!parsed.success)
      throw new LabelCacheError(`GET ${path} answered a body that is not a label sidecar`, { cause: parsed.error });
    return parsed.data.labels;
  }

  async put(k: LabelCacheKey, labels: ClipLabels): Promise<void> {
    const path = sidecarPath(k);
    if (!path) return;
    const sidecar: LabelSidecarV1 = { version: 1, ...k, labels };
    const res = await this.#fetch(this.#base + path, {
      method: "PUT",
      headers: { ...this.#headers, "content-type": "application/json" },
      body: JSON.stringify(sidecar),
    });
    if (!res.ok) throw new LabelCacheError(`PUT ${path} answered ${res.status}: ${await res.text()}`);
    await res.body?.cancel();
  }
}
