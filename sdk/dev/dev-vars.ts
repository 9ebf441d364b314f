import { generateKeyPairSync, randomBytes } from "node:crypto";
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The Worker secrets of a local edge, as `.dev.vars` holds them. */
export interface DevVars {
  /** Comma-separated bearer tokens. */
  readonly EC_API_TOKENS: string;
  /** HMAC secret of signed URLs. */
  readonly EC_SIGNING_KEY: string;
  /** base64 of a PKCS#8 DER Ed25519 private key that signs manifests. */
  readonly EC_MANIFEST_KEY: string;
}

const GENERATORS: Record<keyof DevVars, () => string> = {
  EC_API_TOKENS: () => `ec_dev_${randomBytes(24).toString("base64url")}`,
  EC_SIGNING_KEY: () => randomBytes(32).toString("base64url"),
  EC_MANIFEST_KEY: () =>
    generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64"),
};

/** Parses the dotenv subset .dev.vars uses: KEY=value or KEY="value", # comments. */
export function parseDevVars(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!m || line.trimStart().startsWith("#")) continue;
    let value = m[2]!;
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.endsWith(value[0]!))
      value = value.slice(1, -1);
    out[m[1]!] = value;
  }
  return out;
}

function readIfExists(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/**
 * Reads `<dir>/.dev.vars`, creating it (mode 0600, random values) on first use. An existing
 * value is never overwritten; a missing secret is appended, so older files keep working.
 *
 * @example
 * const vars = ensureDevVars(projectRoot());
 * vars.EC_API_TOKENS.split(",")[0]; // a dev bearer token
 */
export function ensureDevVars(dir: string): DevVars {
  const path = join(dir, ".dev.vars");
  mkdirSync(dir, { recursive: true });
  let text = readIfExists(path);
  if (text === undefined) {
    const fresh = Object.fromEntries(Object.entries(GENERATORS).map(([k, make]) => [k, make()]));
    const body =
      "# Local secrets of the ec edge (git-ignored). Generated on first use; delete it to regenerate.\n" +
      Object.entries(fresh)
        .map(([k, v]) => `${k}="${v}"\n`)
        .join("");
    try {
      // "wx": of two processes starting at once, one writes and both read the same file.
      writeFileSync(path, body, { mode: 0o600, flag: "wx" });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    text = readFileSync(path, "utf8");
  }
  const vars = parseDevVars(text);
  const missing = (Object.keys(GENERATORS) as (keyof DevVars)[]).filter((k) => !vars[k]);
  if (missing.length > 0) {
    appendFileSync(path, missing.map((k) => `${k}="${(vars[k] = GENERATORS[k]())}"\n`).join(""), { mode: 0o600 });
  }
  return vars as unknown as DevVars;
}

/**
 * The first bearer token of a .dev.vars.
 *
 * @example
 * devToken(ensureDevVars(dir));
 */
export function devToken(vars: DevVars): string {
  return vars.EC_API_TOKENS.split(",")[0]!.trim();
}
