/**
 * `ec dev [--port N] [--persist DIR] [--json]`: the local services (the edge in workerd with a
 * persisted R2) until SIGINT/SIGTERM, then stops everything it started.
 */
import { parseArgs } from "node:util";
import { describeReceived } from "../../common/errors.js";
import { startDevStack } from "../dev/services.js";
import { waitForSignal } from "../dev/wait-for-signal.js";
import { reportErrors } from "../dev/cli-report.js";
import { InvalidOptionError } from "../errors.js";

const USAGE = "usage: ec dev [--port N] [--persist DIR] [--json]\n";

function parsePort(raw: string | undefined): number {
  if (raw === undefined) return 8787;
  const port = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(port >= 0 && port <= 65535))
    throw new InvalidOptionError(`Expected a port from 0 to 65535 for --port but received ${describeReceived(raw)}`);
  return port;
}

/**
 * @example
 * await main(["--port", "0", "--json"]); // prints {"edge":"http://127.0.0.1:PORT","token":"..."}
 */
export function main(argv: string[]): Promise<number> {
  return reportErrors("dev", USAGE, () => run(argv));
}

async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: "string" },
      persist: { type: "string" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const signal = waitForSignal();
  const stack = await startDevStack({ port: parsePort(values.port), persistDir: values.persist, quiet: values.json });
  if (values.json) {
    process.stdout.write(`${JSON.stringify(stack.fields)}\n`);
  } else {
    const width = Math.max(...Object.keys(stack.fields).map((k) => k.length));
    const lines = Object.entries(stack.fields).map(([k, v]) => `  ${k.padEnd(width)}  ${v}`);
    process.stdout.write(`ec dev is up (Ctrl-C stops it):\n${lines.join("\n")}\n`);
  }
  await signal;
  await stack.stop();
  return 0;
}
