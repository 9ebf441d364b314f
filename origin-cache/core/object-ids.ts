/**
 * The cache's side of object ids (common/schema/object-ids.ts): each client's ids of the objects
 * it registered, the most recently used `max` of them over all clients, and the resolution of a
 * request's ranges or spans named by id to the URL and ETag they read.
 */
import { OBJECT_IDS_MAX, type ObjectRef } from "../../common/schema/object-ids.js";
import { ObjectIdUnknownError } from "../errors.js";

type Target = Omit<ObjectRef, "id">;
/** An item of a request naming its object by id instead of `url` (and `etag`). */
type ById<R> = Omit<R, "url" | "etag"> & { readonly object: string };

export class ObjectIds {
  /** `client \0 id` → the object; Map order is recency, oldest first. */
  readonly #ids = new Map<string, Target>();

  constructor(readonly max = OBJECT_IDS_MAX) {}

  get size(): number {
    return this.#ids.size;
  }

  /**
   * `items` with every `object: id` replaced by its `url` (and `etag`), after `objects` are
   * registered; ERR_OBJECT_ID_UNKNOWN (nothing resolved) when one is not held. A request's own
   * registrations resolve even past the bound, so one larger than it still answers.
   */
  resolve<R extends { readonly url: string }>(
    client: string,
    objects: readonly ObjectRef[] | undefined,
    items: readonly (R | ById<R>)[],
  ): R[] {
    const own = new Map<string, Target>();
    for (const { id, ...target } of objects ?? []) {
      own.set(id, target);
      this.#touch(`${client}\0${id}`, target);
    }
    const unknown = new Set<string>();
    const out = items.map((item): R => {
      if (!("object" in item)) return item;
      const { object, ...rest } = item;
      const target = own.get(object) ?? this.#get(`${client}\0${object}`);
      if (!target) unknown.add(object);
      return { ...rest, ...target } as unknown as R;
    });
    if (unknown.size > 0) throw new ObjectIdUnknownError(client, [...unknown]);
    return out;
  }

  #get(key: string): Target | undefined {
    const target = this.#ids.get(key);
    if (target) this.#touch(key, target);
    return target;
  }

  #touch(key: string, target: Target): void {
    this.#ids.delete(key);
    this.#ids.set(key, target);
    if (this.#ids.size > this.max) this.#ids.delete(this.#ids.keys().next().value!);
  }
}
