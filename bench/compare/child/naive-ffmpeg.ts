/**
 * Row child: a decoder pointed at the signed URL, one ffmpeg per random clip with an input
 * seek (`-ss T -i URL`), as many at once as there are cores. Frames are converted to RGB
 * (`-pix_fmt rgb24`) so the work matches the other rows; `-f null` drops them.
 * argv[2]: `@PATH` of a JSON file (or the JSON itself) { clips: [{ url, clip }], concurrency, batch, stepMs }.
 */
import { execFile } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { readChildArgs } from "../child-args.js";
import { selfCpuSeconds } from "../proc-tree.js";
import { ConsumerClock, emitReport, type ClipRef } from "../row-result.js";

const run = promisify(execFile);

interface NaiveArgs {
  readonly clips: readonly { readonly url: string; readonly clip: ClipRef }[];
  readonly concurrency: number;
  readonly batch: number;
  readonly stepMs: number;
}

async function decodeClip(url: string, clip: ClipRef): Promise<void> {
  // Decoding `frames` frames from the seek point covers the clip; a stride > 1 needs its whole span.
  const span = (clip.frames - 1) * clip.stride + 1;
  await run("ffmpeg", [
    "-hide_banner",
    "-loglevel",
    "error",
    "-nostdin",
    "-ss",
    clip.startSeconds.toFixed(6),
    "-i",
    url,
    "-map",
    "0:v:0",
    "-frames:v",
    String(span),
    "-pix_fmt",
    "rgb24",
    "-f",
    "null",
    "-",
  ]);
}

async function main(): Promise<void> {
  const args = readChildArgs<NaiveArgs>(process.argv[2]);
  const cpu0 = selfCpuSeconds();
  const clock = new ConsumerClock();
  // Clips finish out of order; the consumer takes batches in clip order, as a loader delivers them.
  const done: Promise<void>[] = [];
  let next = 0;
  const gates = args.clips.map(() => {
    let open!: () => void;
    let fail!: (e: unknown) => void;
    const p = new Promise<void>((resolve, reject) => ((open = resolve), (fail = reject)));
    p.catch(() => {});
    return { p, open, fail };
  });
  const worker = async (): Promise<void> => {
    while (next < args.clips.length) {
      const i = next++;
      const { url, clip } = args.clips[i]!;
      try {
        await decodeClip(url, clip);
        gates[i]!.open();
      } catch (err) {
        gates[i]!.fail(err);
      }
    }
  };
  for (let w = 0; w < Math.min(args.concurrency, args.clips.length); w++) done.push(worker());
  let clips = 0;
  let frames = 0;
  const errors: Record<string, number> = {};
  for (let b = 0; b < args.clips.length; b += args.batch) {
    clock.ask();
    for (let i = b; i < Math.min(b + args.batch, args.clips.length); i++) {
      try {
        await gates[i]!.p;
        clips++;
        frames += args.clips[i]!.clip.frames;
      } catch {
        errors.ERR_FFMPEG = (errors.ERR_FFMPEG ?? 0) + 1;
      }
    }
    clock.got();
    if (args.stepMs > 0) await sleep(args.stepMs);
  }
  await Promise.all(done);
  emitReport({ clips, frames, ...clock.done(), cpuSeconds: selfCpuSeconds() - cpu0, errors });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
