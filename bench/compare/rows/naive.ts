/** Naive streaming: ffmpeg pointed at each clip's signed URL through the WAN, with an input seek. */
import { join } from "node:path";
import { ROW_TIMEOUT_MS, urlFor, type RowDef } from "../row.js";
import { writeChildArgs } from "../child-args.js";
import { runChild } from "../run-child.js";

export const naiveRow: RowDef = {
  name: "naive",
  label: "naive: ffmpeg -ss T -i URL",
  slow: true,
  async run(ctx) {
    const bed = ctx.testbed;
    if (!bed) return { kind: "skipped", reason: "the local edge did not start (see the message above)" };
    const args = {
      clips: ctx.clips.map((clip) => ({ url: urlFor(bed, clip.key), clip })),
      concurrency: ctx.config.workers,
      batch: ctx.config.batch,
      stepMs: ctx.config.stepMs,
    };
    const m = await runChild({
      command: process.execPath,
      // In a file: every clip with its signed URL is far more than one argument may hold.
      args: [join(ctx.childDir, "naive-ffmpeg.js"), await writeChildArgs(ctx.workDir, "naive-args", args)],
      wanBytes: () => bed.wan.stats.bytesSent,
      wanRequests: () => bed.wan.stats.requests,
      timeoutMs: ROW_TIMEOUT_MS,
      cpus: ctx.config.cpus,
    });
    return { kind: "ran", ...m };
  },
};
