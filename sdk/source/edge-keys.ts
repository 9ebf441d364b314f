/**
 * Which Ed25519 keys an edge's manifests and tables must be signed with. GET /v1/keys comes from
 * the same edge as the manifest, so it vouches for nothing on its own: the keys are pinned
 * (`edgeKeys`, EC_EDGE_KEYS), or else trusted on first use and remembered per edge origin in
 * `known-edges.json` under the user's config folder; an edge that later serves other keys is
 * refused with ERR_MANIFEST_KEY_CHANGED until they are accepted (`ec keys URL --accept`).
 */
import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { z } from "zod";
import { fetchPublicKeys, type ManifestClientOptions } from "../../common/manifest-client.js";
import { ManifestError, ManifestErrorCode, publicKeyEntry } from "../../common/manifest-sign.js";
import type { PublicKeysV1 } from "../../common/schema/index.js";
import { InvalidOptionError } from "../errors.js";
import { EdgeKeysSchema, edgeKeysFromText } from "./edge-keys-option.js";

/**
 * Pinned keys (an option, EC_EDGE_KEYS, or a known-edges entry) as /v1/keys entries, each keyId
 * derived from its key.
 *
 * @example
 * const keys = await pinnedKeys(process.env.EC_EDGE_KEYS!, "EC_EDGE_KEYS");
 */
export async function pinnedKeys(input: unknown, name: string): Promise<PublicKeysV1> {
  const value = typeof input === "string" ? edgeKeysFromText(input) : input;
  const parsed = EdgeKeysSchema.safeParse(value);
  const listed = parsed.success ? (Array.isArray(parsed.data) ? parsed.data : parsed.data.keys) : [];
  const keys = await Promise.all(listed.map((k) => publicKeyEntry(typeof k === "string" ? k : k.publicKey)));
  const bad = keys.indexOf(undefined);
  if (!parsed.success || keys.length === 0 || bad >= 0)
    throw new InvalidOptionError(
      `Expected ${name} as the edge's Ed25519 public keys (base64url, as \`ec keys URL\` prints them) but received ${
        bad >= 0 ? JSON.stringify(listed[bad]) : "something else"
      }`,
    );
  return { keys: keys as PublicKeysV1["keys"] };
}

/** What the store remembers of one edge origin. */
const KnownEdge = z.object({ keys: z.array(z.string()).min(1), firstSeen: z.string() });
const KnownEdges = z.object({ version: z.literal(1), edges: z.record(z.string(), KnownEdge) });
type KnownEdges = z.infer<typeof KnownEdges>;

/**
 * The file of keys first seen per edge: EC_KNOWN_EDGES, else
 * `${XDG_CONFIG_HOME:-~/.config}/ec/known-edges.json`.
 *
 * @example
 * knownEdgesPath({ HOME: "/home/a" }); // "/home/a/.config/ec/known-edges.json"
 */
export function knownEdgesPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.EC_KNOWN_EDGES) return env.EC_KNOWN_EDGES;
  const config = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), ".config");
  return join(config, "ec", "known-edges.json");
}

async function readKnown(path: string): Promise<KnownEdges> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { version: 1, edges: {} };
    throw err;
  }
  let json: unknown;
  try {
    json = JSON.parse(text || "{}");
  } catch {
    json = undefined;
  }
  const parsed = KnownEdges.safeParse(json);
  if (!parsed.success)
    throw new ManifestError(
      ManifestErrorCode.INVALID,
      `${path} is not a known-edges file of this version (${parsed.error.issues[0]?.message ?? "not JSON"}); move it away to start again`,
    );
  return parsed.data;
}

/**
 * Records `keys` for `origin`: read, merge, write a file of its own (0600) and rename it over the
 * old one, so ranks that open at once never see or leave a torn file (the last rename wins; each
 * wrote the same keys for an edge both saw first).
 */
async function remember(path: string, origin: string, keys: readonly string[]): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const known = await readKnown(path);
  known.edges[origin] = { keys: [...keys], firstSeen: new Date().toISOString() };
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await writeFile(tmp, `${JSON.stringify(known, null, 2)}\n`, { mode: 0o600, flag: "wx" });
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

export interface TrustOptions extends Pick<ManifestClientOptions, "fetch" | "signal"> {
  /** Pinned keys (the `edgeKeys` option, or EC_EDGE_KEYS as resolveOptions read it). */
  readonly pinned?: PublicKeysV1 | undefined;
  /** The known-edges file (default knownEdgesPath()). */
  readonly path?: string | undefined;
}

/**
 * The keys an edge's manifests and tables are verified with: the pinned ones; else those first
 * seen for its origin, provided the edge still serves no other key (ERR_MANIFEST_KEY_CHANGED
 * otherwise, saying how to accept them); else what it serves now, remembered for next time.
 *
 * @example
 * const keys = await trustedKeys("https://edge.example.com");
 */
export function trustedKeys(edge: string, opts: TrustOptions = {}): Promise<PublicKeysV1> {
  const origin = new URL(edge).origin;
  return trustFirstSeen(origin, () => fetchPublicKeys(origin, opts), `\`ec keys ${origin} --accept\``, opts);
}

/**
 * trustedKeys for any place that publishes its keys beside what they sign (`served`), such as a
 * bucket read without the edge; `identity` names it in the known-edges file, `accept` says how to
 * accept new keys.
 */
export async function trustFirstSeen(
  identity: string,
  served: () => Promise<PublicKeysV1>,
  accept: string,
  opts: Pick<TrustOptions, "pinned" | "path"> = {},
): Promise<PublicKeysV1> {
  if (opts.pinned) return opts.pinned;
  const path = opts.path ?? knownEdgesPath();
  const [known, now] = await Promise.all([readKnown(path), served()]);
  const seen = known.edges[identity];
  const servedKeys = now.keys.map((k) => k.publicKey);
  if (!seen) {
    const first = await pinnedKeys(servedKeys, `the keys ${identity} serves`).catch((cause: unknown) => {
      throw new ManifestError(ManifestErrorCode.INVALID, (cause as Error).message, { cause });
    });
    await remember(
      path,
      identity,
      first.keys.map((k) => k.publicKey),
    );
    return first;
  }
  const trusted = await pinnedKeys(seen.keys, path);
  const have = new Set(trusted.keys.map((k) => k.publicKey));
  const fresh = (await Promise.all(servedKeys.map(publicKeyEntry))).filter((k) => k && !have.has(k.publicKey));
  if (fresh.length > 0 || servedKeys.length === 0)
    throw new ManifestError(
      ManifestErrorCode.KEY_CHANGED,
      `${identity} now serves manifest keys (${now.keys.map((k) => k.keyId).join(", ") || "none"}) other than those first seen on ${seen.firstSeen} (${trusted.keys
        .map((k) => k.keyId)
        .join(
          ", ",
        )}), remembered in ${path}. If the edge's key was rotated, accept the new keys with ${accept} (or pin them: EC_EDGE_KEYS or the edgeKeys option); if not, something is answering in the edge's name`,
    );
  return trusted;
}

/**
 * Remembers the keys `edge` serves now in place of those first seen (`ec keys URL --accept`).
 *
 * @example
 * await acceptKeys("https://edge.example.com", keys); // an edge by its origin
 */
export async function acceptKeys(identity: string, keys: PublicKeysV1, path = knownEdgesPath()): Promise<void> {
  await remember(
    path,
    identity,
    keys.keys.map((k) => k.publicKey),
  );
}
