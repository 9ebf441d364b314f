/**
 * Resolves with the first SIGINT or SIGTERM, then stops listening, so a long-running command
 * can stop what it started and exit on its own terms.
 *
 * @example
 * const signal = waitForSignal();
 * const stack = await startDevStack(req);
 * await signal;
 * await stack.stop();
 */
export function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (signal: NodeJS.Signals): void => {
      process.off("SIGINT", on);
      process.off("SIGTERM", on);
      resolve(signal);
    };
    process.on("SIGINT", on);
    process.on("SIGTERM", on);
  });
}
