/**
 * Ed25519 signatures of manifests with WebCrypto, so the edge (workerd) signs and any holder
 * (Node 20, a browser) verifies offline with the public key from GET /v1/keys.
 */
import { EcError, type EcErrorOptions } from "./errors.js";
import { ManifestV1, type PublicKeysV1, SignedManifestV1 } from "./schema/index.js";

/** Why a manifest was refused. Callers branch on `code`. */
export const ManifestErrorCode = {
  /** The signature does not match the payload: tampered or signed by another key. */
  SIGNATURE: "ERR_MANIFEST_SIGNATURE",
  /** No public key with the manifest's keyId. */
  UNKNOWN_KEY: "ERR_MANIFEST_UNKNOWN_KEY",
  /** Past its expiresAt: its signed URLs no longer work. */
  EXPIRED: "ERR_MANIFEST_EXPIRED",
  /** Not a SignedManifestV1, or a payload that is not a ManifestV1. */
  INVALID: "ERR_MANIFEST_INVALID",
  /** The signing key (EC_MANIFEST_KEY) is missing or not a base64 PKCS#8 Ed25519 key. */
  KEY_CONFIG: "ERR_MANIFEST_KEY",
  /** The edge answered a manifest, keys or index request with an error or not at all. */
  HTTP: "ERR_MANIFEST_HTTP",
  /** The edge serves other manifest keys than the ones pinned or first seen for its origin. */
  KEY_CHANGED: "ERR_MANIFEST_KEY_CHANGED",
  /** A manifest or /urls answer holds a URL of another origin or route than the edge's own. */
  FOREIGN_URL: "ERR_MANIFEST_FOREIGN_URL",
  /** The edge answered a manifest, keys, table or index request with a redirect; none is followed. */
  REDIRECT: "ERR_MANIFEST_REDIRECT",
} as const;

/** A manifest could not be signed, fetched or trusted. */
export class ManifestError extends EcError {
  constructor(code: string, message: string, options?: EcErrorOptions) {
    super(code, message, options);
    this.name = "ManifestError";
  }
}

/** The private half and its published identity. */
export interface ManifestSigner {
  readonly privateKey: CryptoKey;
  readonly keyId: string;
  /** base64url of the raw 32-byte public key. */
  readonly publicKey: string;
}

const ED25519 = { name: "Ed25519" } as const;
const encoder = new TextEncoder();

function toBase64Url(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(text)) return undefined;
  try {
    return Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

const signers = new Map<string, Promise<ManifestSigner>>();

/**
 * Imports `EC_MANIFEST_KEY` (base64 PKCS#8 DER Ed25519) once per isolate; the public key is
 * read back from the private key's JWK, and its keyId is the first 16 base64url characters
 * of its SHA-256, so rotating the key changes the id.
 *
 * @example
 * const signer = await manifestSigner(env.EC_MANIFEST_KEY);
 */
export function manifestSigner(pkcs8Base64: string | undefined): Promise<ManifestSigner> {
  if (!pkcs8Base64)
    return Promise.reject(new ManifestError(ManifestErrorCode.KEY_CONFIG, "EC_MANIFEST_KEY is not set"));
  let signer = signers.get(pkcs8Base64);
  if (!signer) {
    signer = importSigner(pkcs8Base64);
    signer.catch(() => signers.delete(pkcs8Base64));
    if (signers.size > 4) signers.clear();
    signers.set(pkcs8Base64, signer);
  }
  return signer;
}

async function importSigner(pkcs8Base64: string): Promise<ManifestSigner> {
  const der = fromBase64(pkcs8Base64.trim());
  if (!der) throw new ManifestError(ManifestErrorCode.KEY_CONFIG, "Expected EC_MANIFEST_KEY as base64 but it is not");
  let privateKey: CryptoKey;
  let x: string;
  try {
    privateKey = await crypto.subtle.importKey("pkcs8", der, ED25519, true, ["sign"]);
    x = ((await crypto.subtle.exportKey("jwk", privateKey)) as JsonWebKey).x!;
  } catch (cause) {
    throw new ManifestError(
      ManifestErrorCode.KEY_CONFIG,
      "Expected EC_MANIFEST_KEY to be a PKCS#8 DER Ed25519 private key",
      { cause },
    );
  }
  const raw = fromBase64(x)!;
  return { privateKey, keyId: await keyIdOf(raw), publicKey: toBase64Url(raw) };
}

async function keyIdOf(raw: Uint8Array<ArrayBuffer>): Promise<string> {
  return toBase64Url(new Uint8Array(await crypto.subtle.digest("SHA-256", raw))).slice(0, 16);
}

/**
 * The /v1/keys entry of a raw Ed25519 public key given as base64url (or base64), its keyId
 * derived as the edge derives it; undefined for anything that is not 32 bytes of key. A pinned
 * key names its own id, so a keyId written beside it cannot point elsewhere.
 *
 * @example
 * const entry = await publicKeyEntry("mZ3…"); // { keyId: "…", alg: "Ed25519", publicKey: "mZ3…" }
 */
export async function publicKeyEntry(publicKey: string): Promise<PublicKeysV1["keys"][number] | undefined> {
  const raw = fromBase64(publicKey.trim());
  if (raw?.length !== 32) return undefined;
  return { keyId: await keyIdOf(raw), alg: "Ed25519", publicKey: toBase64Url(raw) };
}

/**
 * Serializes and signs a manifest page. The payload is the exact JSON string that was
 * signed; verifiers check those bytes, never a re-serialization.
 *
 * @example
 * const body = await signManifest(manifest, await manifestSigner(env.EC_MANIFEST_KEY));
 */
export function signManifest(manifest: ManifestV1, signer: ManifestSigner): Promise<SignedManifestV1> {
  return signJson(manifest, signer);
}

/**
 * Signs any JSON document the way manifests are signed (a dataset table's head, …).
 *
 * @example
 * const body = await signJson(head, signer);
 */
export async function signJson(value: unknown, signer: ManifestSigner): Promise<SignedManifestV1> {
  const payload = JSON.stringify(value);
  const signature = new Uint8Array(await crypto.subtle.sign("Ed25519", signer.privateKey, encoder.encode(payload)));
  return { payload, signature: toBase64Url(signature), keyId: signer.keyId };
}

/**
 * The public keys document served at GET /v1/keys.
 *
 * @example
 * c.json(publicKeys([await manifestSigner(env.EC_MANIFEST_KEY)]));
 */
export function publicKeys(signers: readonly ManifestSigner[]): PublicKeysV1 {
  return { keys: signers.map((s) => ({ keyId: s.keyId, alg: "Ed25519" as const, publicKey: s.publicKey })) };
}

/**
 * Verifies a signed manifest against a set of public keys and returns the parsed manifest.
 * Throws ManifestError: ERR_MANIFEST_INVALID, ERR_MANIFEST_UNKNOWN_KEY,
 * ERR_MANIFEST_SIGNATURE or ERR_MANIFEST_EXPIRED (checked after the signature).
 *
 * @example
 * const manifest = await verifyManifest(await res.json(), keys);
 */
export async function verifyManifest(
  signed: unknown,
  keys: PublicKeysV1,
  opts: { now?: number } = {},
): Promise<ManifestV1> {
  const payload = await verifiedPayload(signed, keys);
  let parsed: ManifestV1;
  try {
    parsed = ManifestV1.parse(JSON.parse(payload));
  } catch (cause) {
    throw new ManifestError(ManifestErrorCode.INVALID, "Signed manifest payload is not a ManifestV1", { cause });
  }
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  if (parsed.expiresAt < now) {
    throw new ManifestError(
      ManifestErrorCode.EXPIRED,
      `Manifest expired at ${new Date(parsed.expiresAt * 1000).toISOString()}; fetch a fresh one`,
    );
  }
  return parsed;
}

/**
 * The payload of a signed document once its Ed25519 signature verifies against `keys`
 * (ERR_MANIFEST_INVALID / _UNKNOWN_KEY / _SIGNATURE otherwise); parsing it is the caller's.
 *
 * @example
 * const head = TableHeadV1.parse(JSON.parse(await verifiedPayload(body, keys)));
 */
export async function verifiedPayload(signed: unknown, keys: PublicKeysV1): Promise<string> {
  const envelope = SignedManifestV1.safeParse(signed);
  if (!envelope.success)
    throw new ManifestError(
      ManifestErrorCode.INVALID,
      `Expected a SignedManifestV1 but received ${envelope.error.message}`,
    );
  const { payload, signature, keyId } = envelope.data;
  const entry = keys.keys.find((k) => k.keyId === keyId);
  if (!entry)
    throw new ManifestError(
      ManifestErrorCode.UNKNOWN_KEY,
      `No public key with keyId ${JSON.stringify(keyId)} (known: ${keys.keys.map((k) => k.keyId).join(", ") || "none"})`,
    );
  const raw = fromBase64(entry.publicKey);
  const sig = fromBase64(signature);
  let ok = false;
  if (raw && raw.length === 32 && sig && sig.length === 64) {
    const publicKey = await crypto.subtle.importKey("raw", raw, ED25519, false, ["verify"]);
    ok = await crypto.subtle.verify("Ed25519", publicKey, sig, encoder.encode(payload));
  }
  if (!ok)
    throw new ManifestError(
      ManifestErrorCode.SIGNATURE,
      `Manifest signature does not verify with key ${keyId}: the manifest was altered or signed by another key`,
    );
  return payload;
}
