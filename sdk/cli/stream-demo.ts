/**
 * The last step of `ec demo` (`npm start`): start an origin-cache in front of the local edge and
 * stream the pushed dataset through it as a short training run would: a simulated training
 * step per batch, several epochs (the second served warm by the cache), the built-in labelers
 * tagging every clip, and a contact sheet of the first batch.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startCache } from "../../origin-cache/index.js";
import type { StreamStats } from "../stats.js";
import { streamWithProgress, type PreviewFile } from "./stream.js";

/** What the demo streams: small clips so that a laptop shows the whole path in seconds. */
export const DEMO_STREAM = { frames: 8, size: [112, 112] as [number, number], batch: 4, blockSize: 64 << 10 } as const;

/** One epoch as the consumer saw it. */
export interface DemoEpoch {
  readonly epoch: number;
  readonly stats: StreamStats;
  /** Seconds from open() to the first batch in the consumer's hands (NaN when none came). */
  readonly first_batch_s: number;
  /** After the first batch, the share of the time the simulated training step waited for data. */
  readonly gpu_idle_ratio: number;
  /** Clips per label flag (built-in labelers, nothing dropped). */
  readonly flags: Readonly<Record<string, number>>;
  /** Clips the labelers looked at. */
  readonly labeled: number;
  /** The dataset table generation the epoch planned from; undefined: from every object's index. */
  readonly generation: number | undefined;
}

export interface DemoStream {
  readonly cache: string;
  readonly epochs: readonly DemoEpoch[];
  /** The contact sheet of epoch 1's first batch, when a batch came. */
  readonly preview: PreviewFile | undefined;
  /** True when every epoch ran to its end and delivered clips. */
  readonly ok: boolean;
}

export interface DemoStreamOptions {
  readonly epochs: number;
  /** The simulated training step per batch, in milliseconds. */
  readonly stepMs: number;
  /** Where to write the first batch's contact sheet (PNG). */
  readonly preview: string;
}

/** The dataset URL of `prefix` at the edge. */
export function demoDatasetUrl(edge: string, prefix: string): string {
  return `${edge}/v1/datasets/${prefix.split("/").map(encodeURIComponent).join("/")}`;
}

/**
 * @example
 * const { epochs, preview } = await streamDemo(edge, "demo", { epochs: 2, stepMs: 50, preview: ".ec/demo-first-batch.png" }, say);
 */
export async function streamDemo(
  edge: { url: string; token: string },
  prefix: string,
  o: DemoStreamOptions,
  say: (line: string) => void,
): Promise<DemoStream> {
  const dir = await mkdtemp(join(tmpdir(), "ec-demo-cache-"));
  const svc = await startCache({
    upstreams: [edge.url],
    dir,
    maxBytes: 512 << 20,
    blockSize: DEMO_STREAM.blockSize,
    logLevel: "silent",
  });
  const epochs: DemoEpoch[] = [];
  let preview: PreviewFile | undefined;
  let ok = true;
  try {
    const { frames, size, batch } = DEMO_STREAM;
    say(
      `origin-cache is up at ${svc.url}; streaming ${prefix}: ${frames}-frame clips at ${size[0]}x${size[1]}, batches of ${batch}, a ${o.stepMs} ms training step per batch`,
    );
    const url = demoDatasetUrl(edge.url, prefix);
    for (let epoch = 0; epoch < o.epochs; epoch++) {
      say(
        `epoch ${epoch + 1} of ${o.epochs}${epoch === 0 ? " (cold: every byte comes from the edge)" : " (warm: served from the cache)"}`,
      );
      const flags: Record<string, number> = {};
      let labeled = 0;
      const run = await streamWithProgress(
        url,
        { token: edge.token, cache: svc.url, frames, size, batch, device: "auto", epoch, labels: true, filter: "tag" },
        {
          stepMs: o.stepMs,
          ...(epoch === 0 ? { preview: o.preview } : {}),
          onBatch: (b) => {
            for (const clip of b.clips) {
              const found = clip.labels.flags;
              if (!Array.isArray(found)) continue;
              labeled++;
              for (const f of found) flags[String(f)] = (flags[String(f)] ?? 0) + 1;
            }
          },
        },
      );
      preview ??= run.preview;
      if (run.failed) say(`stream failed: ${(run.failed as Error).message}`);
      ok &&= !run.failed && run.stats.clips > 0;
      epochs.push({
        epoch,
        stats: run.stats,
        first_batch_s: run.firstBatchSeconds ?? NaN,
        gpu_idle_ratio: run.idleAfterFirst,
        flags,
        labeled,
        generation: run.generation,
      });
    }
    return { cache: svc.url, epochs, preview, ok };
  } finally {
    await svc.close();
    await rm(dir, { recursive: true, force: true });
  }
}
