/**
 * The leases the cache's HTTP answers handed to each named client (the `client` of a batched
 * locate), so that a client closing can end every lease it was given, read or not: a long-polled
 * batch aborted by its closing asker loses the lines already on their way, and their leases
 * would otherwise hold their slots until they expire. Bounded: the most recent clients, and the
 * most recent lease ids of each (ending an id already ended or expired does nothing).
 */
export const CLIENTS_MAX = 1024;
export const LEASES_PER_CLIENT_MAX = 1024;

export class ClientLeases {
  readonly #byClient = new Map<string, string[]>();

  constructor(
    readonly maxClients = CLIENTS_MAX,
    readonly perClient = LEASES_PER_CLIENT_MAX,
  ) {}

  /** Notes that `client` was handed lease `id`. */
  add(client: string, id: string): void {
    let ids = this.#byClient.get(client);
    if (ids) this.#byClient.delete(client);
    else ids = [];
    this.#byClient.set(client, ids);
    ids.push(id);
    if (ids.length > this.perClient) ids.splice(0, ids.length - this.perClient);
    if (this.#byClient.size > this.maxClients) this.#byClient.delete(this.#byClient.keys().next().value!);
  }

  /** The lease ids handed to `client`, forgotten here (the caller ends them). */
  take(client: string): string[] {
    const ids = this.#byClient.get(client) ?? [];
    this.#byClient.delete(client);
    return ids;
  }

  get clients(): number {
    return this.#byClient.size;
  }
}
