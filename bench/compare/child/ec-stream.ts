/**
 * Row child: iterates a dataset with ec's open() as a training loop would, and reports.
 * Used by the local-files row, ec cold/warm, and the decode half of download-then-decode.
 * argv[2]: JSON { url, options, stepMs, download? }.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { open, type OpenOptions } from "../../../sdk/index.js";
import { minorFaultsOf, selfCpuSeconds } from "../proc-tree.js";
import { ConsumerClock, emitReport, type ClipRef } from "../row-result.js";
import { downloadAll, type DownloadPlan } from "./download.js";

interface EcStreamArgs {
  readonly url: string;
  readonly options: OpenOptions;
  readonly stepMs: number;
  /** Download these objects into `url` (a directory) first, inside the timed run. */
  readonly download?: DownloadPlan;
}

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2] ?? "{}") as EcStreamArgs;
  const cpu0 = selfCpuSeconds();
  const faults0 = minorFaultsOf(process.pid);
  const clock = new ConsumerClock();
  const downloaded = args.download ? await downloadAll(args.download, args.url) : 0;
  const ds = await open(args.url, args.options);
  const clipList: ClipRef[] = [];
  try {
    const it = ds[Symbol.asyncIterator]();
    for (;;) {
      clock.ask();
      const next = await it.next();
      if (next.done) break;
      clock.got();
      // A training step reads the batch tensor (stacked into reused memory), then lets it go.
      void next.value.frames.data.byteLength;
      next.value.release();
      for (const c of next.value.clips) {
        clipList.push({ key: c.key, start: c.start, startSeconds: c.pts[0] ?? 0, frames: c.frames, stride: c.stride });
      }
      if (args.stepMs > 0) await sleep(args.stepMs);
    }
  } finally {
    await ds.close();
  }
  const timing = clock.done();
  const s = ds.stats();
  emitReport({
    clips: s.clips,
    frames: s.frames,
    ...timing,
    bytesFetched: args.download ? downloaded : s.bytes_fetched,
    bytesNeeded: s.bytes_needed,
    cpuSeconds: selfCpuSeconds() - cpu0,
    minorFaults: minorFaultsOf(process.pid) - faults0,
    clipList,
    device: s.device,
    errors: s.errors,
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
