/**
 * `ec engine`: the process the Python client starts, one per rank or DataLoader worker. It speaks
 * JSON lines on stdin/stdout (sdk/bridge/protocol.ts) and writes batches into shared memory; it
 * exits when its client closes the pipe, so a killed client leaves no engine behind.
 */
import { EngineSession } from "../bridge/engine.js";

export async function main(argv: string[]): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(
      "usage: ec engine   (started by a client such as the Python package; speaks JSON lines on stdin/stdout)\n",
    );
    return 0;
  }
  await new EngineSession(process.stdin, process.stdout).run();
  // The pipeline may hold decoder threads and sockets; the client is gone or done, so end now.
  process.exit(0);
}
