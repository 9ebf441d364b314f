/**
 * The client's side of object ids (common/schema/object-ids.ts): a short id of its own for each
 * object it plans, sent with the object's signed URL until the cache has acknowledged it at that
 * URL, and by id alone after that. A re-signed URL is registered again under the same id; once
 * the cache answers ERR_OBJECT_ID_UNKNOWN (it restarted, or dropped the id) every object is
 * registered anew.
 */
import type { Dispatcher } from "undici";
import { ErrorBody } from "../../common/errors.js";
import { OBJECT_ID_UNKNOWN, OBJECT_IDS_MAX, type ObjectRef } from "../../common/schema/object-ids.js";

interface Entry {
  readonly id: string;
  readonly etag: string | undefined;
  /** The URL the cache acknowledged for the id; undefined while it may not hold it. */
  known: string | undefined;
}

/** The objects of a request's items by id (`ids[i]` names `items[i]`'s), those it registers, and `confirm` once the cache answered it. */
export interface Referred {
  readonly ids: readonly string[];
  readonly objects: ObjectRef[];
  readonly confirm: () => void;
}

type Named = { readonly url: string; readonly etag?: string | undefined };

/** The object's identity for its id: its URL without the signature's query, and its version. */
const identity = (url: string, etag: string | undefined): string => {
  const q = url.indexOf("?");
  return `${etag ?? ""} ${q < 0 ? url : url.slice(0, q)}`;
};

export class ObjectIdClient {
  /** By identity, most recently registered last; bounded as the cache's map is. */
  readonly #entries = new Map<string, Entry>();
  /** The same entries by the exact URL last seen, so a window of known URLs builds no identity. */
  readonly #byUrl = new Map<string, Entry>();
  #next = 0;

  /** `client`: whose ids these are, the name the client's plans and batches carry. */
  constructor(
    readonly client: string,
    readonly max = OBJECT_IDS_MAX,
  ) {}

  /** The ids of `items`' objects, registering each the cache is not known to hold at its URL (every one with `all`). */
  refer(items: readonly Named[], all = false): Referred {
    const objects: ObjectRef[] = [];
    const sent = new Map<Entry, string>();
    const ids = items.map(({ url, etag }) => {
      let e = this.#byUrl.get(url);
      if (!e || e.etag !== etag) e = this.#entry(url, etag);
      if ((all || e.known !== url) && !sent.has(e)) {
        sent.set(e, url);
        objects.push(etag === undefined ? { id: e.id, url } : { id: e.id, url, etag });
      }
      return e.id;
    });
    return {
      ids,
      objects,
      confirm: () => {
        for (const [e, url] of sent) e.known = url;
      },
    };
  }

  /** The entry of an object by its identity (a new id for a new one), found again by `url` from now on. */
  #entry(url: string, etag: string | undefined): Entry {
    const key = identity(url, etag);
    let e = this.#entries.get(key);
    if (e) this.#entries.delete(key);
    else e = { id: (this.#next++).toString(36), etag, known: undefined };
    this.#entries.set(key, e);
    this.#byUrl.set(url, e);
    for (const map of [this.#entries, this.#byUrl] as Map<string, Entry>[])
      if (map.size > this.max) map.delete(map.keys().next().value!);
    return e;
  }

  /**
   * Sends a request of `items` by id (`post` builds it from them), and once more with every
   * object registered should the cache not hold an id; the answer is the last request's.
   */
  async send(
    items: readonly Named[],
    post: (ref: Referred) => Promise<Dispatcher.ResponseData>,
  ): Promise<Dispatcher.ResponseData> {
    for (let all = false; ; all = true) {
      const ref = this.refer(items, all);
      const res = await post(ref);
      if (res.statusCode === 200) ref.confirm();
      if (all || !(await refusedForIds(res))) return res;
      this.forget();
    }
  }

  /** The cache no longer holds what it acknowledged: every object is registered with its next request. */
  forget(): void {
    for (const e of this.#entries.values()) e.known = undefined;
  }
}

/** Whether the cache refused a request for an id it does not hold (a 404's body is read). */
async function refusedForIds(res: Dispatcher.ResponseData): Promise<boolean> {
  if (res.statusCode !== 404) return false;
  const parsed = ErrorBody.safeParse(await res.body.json().catch(() => undefined));
  return parsed.success && parsed.data.error.code === OBJECT_ID_UNKNOWN;
}
