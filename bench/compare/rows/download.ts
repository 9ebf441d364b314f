/**
 * Download-then-decode: every object of the dataset fetched whole through the WAN onto local
 * disk (8 at a time), then the clips decoded from there with ec's local pipeline, so the
 * difference to the local row is the download step alone. Time to first batch includes it.
 */
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { ecOptions, ROW_TIMEOUT_MS, type RowDef } from "../row.js";
import { runChild } from "../run-child.js";

export const downloadRow: RowDef = {
  name: "download",
  label: "download whole files, then decode",
  async run(ctx) {
    const bed = ctx.testbed;
    if (!bed) return { kind: "skipped", reason: "the local edge did not start (see the message above)" };
    const dir = join(ctx.workDir, "downloaded");
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const prefix = (key: string): string => key.slice(key.indexOf("/") + 1);
    const args = {
      url: dir,
      options: ecOptions(ctx.config),
      stepMs: ctx.config.stepMs,
      download: { objects: bed.objects.map((o) => ({ key: prefix(o.key), url: o.url })), concurrency: 8 },
    };
    try {
      const m = await runChild({
        command: process.execPath,
        args: [join(ctx.childDir, "ec-stream.js"), JSON.stringify(args)],
        env: { NODE_EXTRA_CA_CERTS: bed.caFile },
        wanBytes: () => bed.wan.stats.bytesSent,
        wanRequests: () => bed.wan.stats.requests,
        timeoutMs: ROW_TIMEOUT_MS,
        cpus: ctx.config.cpus,
      });
      return { kind: "ran", ...m };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
};
