/**
 * Child process for the local data plane tests, a client of an origin-cache on this host:
 *  - "hold": locates a span (taking a lease), says so, and waits to be killed without releasing it;
 *  - "read": reads a span through remoteCache and reports whether the local plane served it.
 * Arguments come as JSON in EC_LOCATE_CHILD; results go to stdout as one JSON line.
 */
import { Agent, request } from "undici";
import { LocateResponse } from "../../origin-cache/index.js";
import { remoteCache } from "../../sdk/source/cache-client.js";
import { LocalPlane } from "../../sdk/source/local-plane.js";

interface ChildArgs {
  mode: "hold" | "read";
  cache: string;
  url: string;
  offset: number;
  length: number;
  leaseMs?: number;
}

async function main(): Promise<void> {
  const a = JSON.parse(process.env.EC_LOCATE_CHILD ?? "{}") as ChildArgs;
  if (a.mode === "hold") {
    const res = await request(`${a.cache}/v1/locate`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ url: a.url, offset: a.offset, length: a.length, leaseMs: a.leaseMs }) });
    const located = LocateResponse.parse(await res.body.json());
    process.stdout.write(`${JSON.stringify({ lease: located.lease.id })}\n`);
    setInterval(() => {}, 1000);
    return;
  }
  const agent = new Agent();
  const plane = new LocalPlane(a.cache, agent);
  const local = await plane.read(a.url, a.offset, a.length, undefined);
  const cache = await remoteCache(a.cache);
  const bytes = Buffer.from(await cache.read(a.url, a.offset, a.length, undefined));
  await cache.close();
  await plane.close();
  await agent.close();
  process.stdout.write(`${JSON.stringify({ local: local !== undefined, planeEnabled: plane.enabled, fallbacks: plane.fallbacks, hex: bytes.toString("hex") })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
