/** What each row file provides, and what the harness hands every row. */
import type { CompareConfig, RowName } from "./args.js";
import type { ClipRef } from "./row-result.js";
import type { PythonPairs } from "./pair-summary.js";
import type { Measured } from "./run-child.js";
import type { Testbed } from "./testbed.js";

export interface RowContext {
  readonly config: CompareConfig;
  /** Directory holding the videos (the local-files dataset). */
  readonly localDir: string;
  /** Scratch space for this run. */
  readonly workDir: string;
  /** Compiled bench children live here (dist/bench/compare/child). */
  readonly childDir: string;
  /** Repository root (bench/torch_loader.py is under it). */
  readonly root: string;
  /** The edge behind the WAN emulator; undefined when no remote row runs or it failed to start. */
  readonly testbed: Testbed | undefined;
  /** The origin-cache process (started empty before ec cold, kept for ec warm). */
  readonly cache: { readonly url: string; readonly pid: number } | undefined;
  /** The clips the local row delivered, in order: what every other row decodes. */
  readonly clips: readonly ClipRef[];
}

export type RowOutcome =
  | ({
      readonly kind: "ran";
      readonly pythonPairs?: PythonPairs;
      /** POST /v1/locate requests the origin-cache answered during the row (the local data plane's). */
      readonly cacheLocates?: number;
      /** fdatasync calls of the origin-cache's store during the row. */
      readonly cacheSyncs?: number;
    } & Measured)
  | { readonly kind: "skipped"; readonly reason: string };

export interface RowDef {
  readonly name: RowName;
  /** Column label in the table and chart. */
  readonly label: string;
  /** Decodes only the first `slowClips` clips (ffmpeg or PyAV per clip: 1–4 clips/s), against local runs of those. */
  readonly slow?: boolean;
  run(ctx: RowContext): Promise<RowOutcome>;
}

/** ec's open() options every ec-pipeline row uses, so they pick the same clips. */
export function ecOptions(config: CompareConfig): Record<string, unknown> {
  return {
    frames: config.frames,
    ...(config.resize ? { size: config.resize } : {}),
    batch: config.batch,
    limit: config.clips,
    seed: config.seed,
    workers: config.workers,
    prefetch: Math.max(8, config.workers * 4),
  };
}

/** The signed URL (through the WAN) of the object a clip's key names: keys match on the path below the dataset prefix. */
export function urlFor(testbed: Testbed, key: string): string {
  const hit = testbed.objects.find((o) => o.key === key || o.key.endsWith(`/${key}`));
  if (!hit) throw new Error(`Expected an uploaded object for clip key ${JSON.stringify(key)} but received none`);
  return hit.url;
}

/** Six minutes per row at most: a stuck row fails instead of hanging the run. */
export const ROW_TIMEOUT_MS = 360_000;
