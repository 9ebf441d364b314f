/** `ec sign KEY [--exp SECONDS] [--edge URL] [--index]`: prints a signed GET/HEAD URL for KEY. */
import { parseArgs } from "node:util";
import { describeReceived } from "../../common/errors.js";
import { keyProblem } from "../../common/keys.js";
import { INDEX_ROUTE, OBJECTS_ROUTE, signedUrl } from "../../common/sign.js";
import { resolveEdge, resolveSigningKey } from "../dev/connection.js";
import { reportErrors } from "../dev/cli-report.js";
import { InvalidOptionError } from "../errors.js";

/** The edge's default bound on a signed URL's lifetime (edge/http/url-signing.ts). */
const MAX_URL_TTL_SECONDS = 7 * 24 * 3600;

const USAGE =
  "usage: ec sign KEY [--exp SECONDS] [--edge URL] [--index]\n  (the secret comes from EC_SIGNING_KEY or the project's .dev.vars)\n";

/**
 * @example
 * await main(["clips/a.mp4", "--exp", "600"]); // prints http://127.0.0.1:8787/v1/objects/clips/a.mp4?exp=…&sig=…
 */
export function main(argv: string[]): Promise<number> {
  return reportErrors("sign", USAGE, () => run(argv));
}

async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      exp: { type: "string", default: "3600" },
      edge: { type: "string" },
      index: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (positionals.length !== 1)
    throw new InvalidOptionError(`Expected one KEY but received ${positionals.length} arguments`);
  const key = positionals[0]!;
  const problem = keyProblem(key);
  if (problem) throw new InvalidOptionError(problem);
  // The edge refuses URLs valid for longer than EC_URL_MAX_TTL_SECONDS (7 days unless it says otherwise).
  const max = /^\d+$/.test(process.env.EC_URL_MAX_TTL_SECONDS ?? "")
    ? Number(process.env.EC_URL_MAX_TTL_SECONDS)
    : MAX_URL_TTL_SECONDS;
  if (!/^\d+$/.test(values.exp) || Number(values.exp) <= 0 || Number(values.exp) > max) {
    throw new InvalidOptionError(
      `Expected a number of seconds from 1 to ${max} (EC_URL_MAX_TTL_SECONDS) for --exp but received ${describeReceived(values.exp)}`,
    );
  }
  const secret = resolveSigningKey();
  if (!secret)
    throw new InvalidOptionError(
      "Expected EC_SIGNING_KEY in the environment or a .dev.vars (run `ec dev` once) but found neither",
    );
  const exp = Math.floor(Date.now() / 1000) + Number(values.exp);
  const url = await signedUrl(resolveEdge(values.edge), values.index ? INDEX_ROUTE : OBJECTS_ROUTE, key, exp, secret);
  process.stdout.write(`${url}\n`);
  return 0;
}
