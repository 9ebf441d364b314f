/**
 * `ec keys URL [--accept] [--json]`: prints the Ed25519 public keys an edge signs its manifests
 * and tables with, for pinning (EC_EDGE_KEYS, the edgeKeys option); `--accept` remembers them for
 * the edge's origin in place of those first seen (after a key rotation: ERR_MANIFEST_KEY_CHANGED).
 */
import { parseArgs } from "node:util";
import { fetchPublicKeys } from "../../common/manifest-client.js";
import { reportErrors } from "../dev/cli-report.js";
import { InvalidOptionError } from "../errors.js";
import { acceptKeys, knownEdgesPath, pinnedKeys } from "../source/edge-keys.js";

const USAGE =
  "usage: ec keys URL [--accept] [--json]\n  URL: the edge (https://EDGE) or a dataset URL on it\n  --accept: trust these keys for the edge from now on (after it rotated its key)\n";

/**
 * @example
 * await main(["http://127.0.0.1:8787"]); // prints EC_EDGE_KEYS=… and one line per key
 */
export function main(argv: string[]): Promise<number> {
  return reportErrors("keys", USAGE, () => run(argv));
}

async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      accept: { type: "boolean", default: false },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (positionals.length !== 1)
    throw new InvalidOptionError(`Expected one edge URL but received ${positionals.length} arguments`);
  let origin: string;
  try {
    const url = new URL(positionals[0]!);
    if (!/^https?:$/.test(url.protocol)) throw new Error("not http(s)");
    origin = url.origin;
  } catch {
    throw new InvalidOptionError(
      `Expected an edge URL like https://EDGE (or a dataset URL on it) but received ${JSON.stringify(positionals[0])}`,
    );
  }
  // Each keyId derived again from its key: what is printed is what a pin will check.
  const keys = await pinnedKeys((await fetchPublicKeys(origin)).keys, `the keys ${origin}/v1/keys serves`);
  const env = keys.keys.map((k) => k.publicKey).join(",");
  if (values.accept) await acceptKeys(origin, keys);
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ edge: origin, keys: keys.keys, env: `EC_EDGE_KEYS=${env}`, ...(values.accept ? { accepted: knownEdgesPath() } : {}) })}\n`,
    );
    return 0;
  }
  process.stdout.write(`EC_EDGE_KEYS=${env}\n`);
  for (const k of keys.keys) process.stdout.write(`${k.keyId}  ${k.alg}  ${k.publicKey}\n`);
  if (values.accept) process.stderr.write(`keys: remembered for ${origin} in ${knownEdgesPath()}\n`);
  return 0;
}
