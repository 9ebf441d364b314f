/** Upper bound: the same clips decoded from local files with ec's own pipeline. */
import { join } from "node:path";
import { ecOptions, ROW_TIMEOUT_MS, type RowDef } from "../row.js";
import { runChild } from "../run-child.js";

export const localRow: RowDef = {
  name: "local",
  label: "local files (ec pipeline)",
  async run(ctx) {
    const args = { url: ctx.localDir, options: ecOptions(ctx.config), stepMs: ctx.config.stepMs };
    const m = await runChild({
      command: process.execPath,
      args: [join(ctx.childDir, "ec-stream.js"), JSON.stringify(args)],
      timeoutMs: ROW_TIMEOUT_MS,
      // On the client set as every other row: unpinned, it inherits the bench's own (remote) set.
      cpus: ctx.config.cpus,
    });
    return { kind: "ran", ...m };
  },
};
