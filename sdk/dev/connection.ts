import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseDevVars } from "./dev-vars.js";
import { varsRoot } from "./project-root.js";

/** Where `ec dev` listens unless told otherwise. */
export const DEFAULT_EDGE = "http://127.0.0.1:8787";

function devVar(name: string): string | undefined {
  try {
    return parseDevVars(readFileSync(join(varsRoot(), ".dev.vars"), "utf8"))[name];
  } catch {
    return undefined;
  }
}

/**
 * The edge base URL: the flag, else EC_EDGE, else the local default. No trailing slash.
 *
 * @example
 * resolveEdge(values.edge); // "http://127.0.0.1:8787"
 */
export function resolveEdge(flag: string | undefined): string {
  return (flag ?? process.env.EC_EDGE ?? DEFAULT_EDGE).replace(/\/+$/, "");
}

/**
 * A bearer token: the flag, else EC_TOKEN, else the first token of the project's .dev.vars
 * (never created here: only `ec dev` makes one).
 *
 * @example
 * resolveToken(values.token);
 */
export function resolveToken(flag: string | undefined): string | undefined {
  return flag ?? process.env.EC_TOKEN ?? devVar("EC_API_TOKENS")?.split(",")[0]?.trim();
}

/**
 * The URL signing secret: EC_SIGNING_KEY, else the project's .dev.vars.
 *
 * @example
 * resolveSigningKey();
 */
export function resolveSigningKey(): string | undefined {
  return process.env.EC_SIGNING_KEY ?? devVar("EC_SIGNING_KEY");
}
