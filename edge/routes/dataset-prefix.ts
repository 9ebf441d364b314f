import { keyProblem, RESERVED_PREFIX } from "../../common/keys.js";
import { InvalidKeyError } from "../errors.js";

/**
 * The dataset prefix of a `/v1/datasets/{prefix}/…` path segment, percent-decoded and checked
 * as a key prefix outside `_ec/` (400 ERR_INVALID_KEY otherwise).
 */
export function datasetPrefix(encoded: string): string {
  let prefix: string;
  try {
    prefix = decodeURIComponent(encoded);
  } catch {
    throw new InvalidKeyError(`Expected a percent-encoded dataset prefix but received ${JSON.stringify(encoded)}`);
  }
  // "_ec" itself passes the key rules, but its listing would be the reserved prefix.
  const problem =
    keyProblem(`${prefix}/x`) ??
    (`${prefix}/`.startsWith(RESERVED_PREFIX)
      ? `Expected a dataset prefix outside ${RESERVED_PREFIX} but received ${JSON.stringify(prefix)}`
      : undefined);
  if (problem !== undefined) throw new InvalidKeyError(problem.replace("object key", "dataset prefix"));
  return prefix;
}
