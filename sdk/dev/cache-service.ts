/** The origin-cache beside the local edge in `ec dev`: adds `"cache": "http://..."` to its fields. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startCache, type CacheService } from "../../origin-cache/index.js";
import type { DevService } from "./dev-service.js";

/** Enough for the sample datasets and a few epochs of small ones; the bound is hard either way. */
const DEV_CACHE_BYTES = 2 * 2 ** 30;

export const devCache: DevService = {
  name: "cache",
  async start(req, before) {
    const edge = before.edge;
    if (!edge) throw new Error("the cache starts after the edge, which gave no URL");
    // Persisted with the edge's R2 when asked, so a restarted `ec dev` keeps its hits.
    const temp = req.persistDir ? undefined : await mkdtemp(join(tmpdir(), "ec-dev-cache-"));
    const dir = temp ?? join(req.persistDir as string, "cache");
    const opts = {
      upstreams: [edge],
      dir,
      maxBytes: DEV_CACHE_BYTES,
      logLevel: req.quiet ? ("silent" as const) : ("warn" as const),
    };
    let svc: CacheService;
    try {
      svc = await startCache({ ...opts, listen: { port: req.port === 0 ? 0 : req.port + 1 } });
    } catch (err) {
      if ((err as { code?: string }).code !== "EADDRINUSE") throw err;
      svc = await startCache({ ...opts, listen: { port: 0 } });
    }
    return {
      fields: { cache: svc.url },
      stop: async () => {
        await svc.close();
        if (temp) await rm(temp, { recursive: true, force: true });
      },
    };
  },
};
