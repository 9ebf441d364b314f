/**
 * Child process for the local data plane tests: a client of an origin-cache on this host that
 * locates a span (taking a lease), says so on stdout, and waits to be killed without releasing it.
 * Arguments come as JSON in EC_LOCATE_CHILD.
 */
import { request } from "undici";
import { LocateResponse } from "../../origin-cache/index.js";

interface ChildArgs {
  mode: "hold";
  cache: string;
  url: string;
  offset: number;
  length: number;
  leaseMs?: number;
}

async function main(): Promise<void> {
  const a = JSON.parse(process.env.EC_LOCATE_CHILD ?? "{}") as ChildArgs;
  if (a.mode === "hold") {
    const res = await request(`${a.cache}/v1/locate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: a.url, offset: a.offset, length: a.length, leaseMs: a.leaseMs }),
    });
    const located = LocateResponse.parse(await res.body.json());
    process.stdout.write(`${JSON.stringify({ lease: located.lease.id })}\n`);
    setInterval(() => {}, 1000);
    return;
  }
  throw new Error(`Expected mode "hold" but received ${JSON.stringify(a.mode)}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
