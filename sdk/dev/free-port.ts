import { createServer } from "node:net";

/**
 * A TCP port on `host` that was free a moment ago. wrangler cannot listen on port 0 and report
 * back, so the caller passes this port and retries on the rare collision.
 *
 * @example
 * const port = await freePort();
 */
export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}
