import { startLocalEdge } from "./local-edge.js";
import { devCache } from "./cache-service.js";
import type { DevRequest, DevService, RunningService } from "./dev-service.js";

export type { DevRequest, DevService, RunningService };

/** The edge first: everything else points at it. */
const edge: DevService = {
  name: "edge",
  async start(req) {
    const e = await startLocalEdge({ port: req.port, persistDir: req.persistDir, quiet: req.quiet });
    return { fields: { edge: e.url, token: e.token }, stop: () => e.stop() };
  },
};

/** The services `ec dev` starts, in order (and stops in reverse). Adding one is one entry here. */
export const devServices: DevService[] = [edge, devCache];

/** The started services, stoppable together. */
export interface DevStack {
  readonly fields: Readonly<Record<string, string>>;
  stop(): Promise<void>;
}

/**
 * Starts every registered service in order; if one fails, stops those already started.
 *
 * @example
 * const stack = await startDevStack({ port: 8787, quiet: true });
 * console.log(stack.fields.edge);
 * await stack.stop();
 */
export async function startDevStack(req: DevRequest, services: readonly DevService[] = devServices): Promise<DevStack> {
  const started: RunningService[] = [];
  const fields: Record<string, string> = {};
  const stop = async () => {
    for (const s of started.reverse()) await s.stop().catch(() => undefined);
  };
  try {
    for (const service of services) {
      const running = await service.start(req, fields);
      started.push(running);
      Object.assign(fields, running.fields);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { fields, stop };
}
