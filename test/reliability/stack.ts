/**
 * The real stack for the cross-cutting reliability suite: a local edge (wrangler + workerd + a
 * local R2) filled with small ffmpeg-made videos, sizes scaled by EC_RELIABILITY_FULL, and the
 * figures each test reports (one JSON line per figure, appended to EC_RELIABILITY_REPORT).
 */
import { appendFileSync, mkdirSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { startLocalEdge, type LocalEdge, type LocalEdgeOptions } from "../../sdk/dev/index.js";
import type { OpenOptions } from "../../sdk/index.js";
import { ffmpegFrameMd5s } from "../helpers/ffmpeg-md5.js";
import { makeVideo, type MakeVideoOptions } from "../helpers/make-video.js";

/** `npm run test:reliability` sets it; the CI variant inside `npm test` runs the small counts. */
export const FULL = process.env.EC_RELIABILITY_FULL === "1";

/** `ci` in the default suite, `full` under EC_RELIABILITY_FULL=1. */
export function scale(ci: number, full: number): number {
  return FULL ? full : ci;
}

/** Records one figure of the report: printed, and appended to EC_RELIABILITY_REPORT when set. */
export function report(name: string, figures: Record<string, unknown>): void {
  const line = JSON.stringify({ name, full: FULL, ...figures });
  process.stdout.write(`[reliability] ${line}\n`);
  const file = process.env.EC_RELIABILITY_REPORT;
  if (file) {
    mkdirSync(dirname(file), { recursive: true });
    appendFileSync(file, `${line}\n`);
  }
}

/** The p-th percentile (0..100) of `values`, nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** How the fault tests read the stack: two-frame native clips, two a batch, two ahead, one decoder. */
export const FAULT_READ = {
  device: "cpu",
  format: "native",
  frames: 2,
  batch: 2,
  prefetch: 2,
  workers: 1,
} as const satisfies OpenOptions;

export interface Stack {
  readonly dir: string;
  /** The running edge; replaced by restartEdge(). */
  readonly edge: LocalEdge;
  /** Stops the edge, waits `downMs`, and starts it again on the same port, R2 and secrets. */
  restartEdge(downMs: number): Promise<void>;
  /** Local file of each distinct video, by name. */
  readonly videos: Map<string, string>;
  /** ffmpeg's framemd5 of each distinct video, by name. */
  readonly md5s: Map<string, string[]>;
  /** PUTs bytes under `key` with the edge's token; resolves with the status. */
  put(key: string, body: Uint8Array): Promise<number>;
  close(): Promise<void>;
}

/** Default fixtures: two small h264 videos (one with B-frames, moov at the end) and one HEVC. */
export const SMALL_VIDEOS: Record<string, MakeVideoOptions> = {
  a: { codec: "h264", width: 64, height: 48, frames: 24, gop: 6, bframes: 2, name: "a.mp4" },
  b: { codec: "h264", width: 48, height: 32, frames: 20, gop: 5, faststart: true, name: "b.mp4" },
  c: { codec: "hevc", width: 64, height: 48, frames: 16, gop: 8, name: "c.mp4" },
};

/**
 * Starts a quiet local edge in a temp dir and makes the videos meanwhile.
 *
 * @example
 * const stack = await startStack();
 * await stack.put("ds/a.mp4", await readFile(stack.videos.get("a")!));
 */
export async function startStack(
  videos: Record<string, MakeVideoOptions> = SMALL_VIDEOS,
  edgeOpts: Pick<LocalEdgeOptions, "quiet" | "port" | "publicOrigin"> = {},
): Promise<Stack> {
  const dir = await mkdtemp(join(tmpdir(), "ec-reliability-"));
  const started = startLocalEdge({
    port: 0,
    ...edgeOpts,
    quiet: edgeOpts.quiet ?? true,
    varsDir: dir,
    persistDir: join(dir, "r2"),
  });
  const files = new Map<string, string>();
  const md5s = new Map<string, string[]>();
  try {
    for (const [name, o] of Object.entries(videos)) {
      const file = await makeVideo(dir, o);
      files.set(name, file);
      md5s.set(name, await ffmpegFrameMd5s(file));
    }
  } catch (err) {
    await (await started.catch(() => undefined))?.stop();
    throw err;
  }
  let edge = await started;
  return {
    dir,
    get edge() {
      return edge;
    },
    async restartEdge(downMs) {
      await edge.stop();
      await new Promise((r) => setTimeout(r, downMs));
      edge = await startLocalEdge({
        ...edgeOpts,
        port: Number(new URL(edge.url).port),
        quiet: edgeOpts.quiet ?? true,
        varsDir: dir,
        persistDir: join(dir, "r2"),
      });
    },
    videos: files,
    md5s,
    async put(key, body) {
      const res = await fetch(`${edge.url}/v1/objects/${key}`, {
        method: "PUT",
        body: body as Uint8Array<ArrayBuffer>,
        headers: { authorization: `Bearer ${edge.token}` },
      });
      await res.arrayBuffer();
      return res.status;
    },
    async close() {
      await edge.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The bytes of a local file as a fresh Uint8Array. */
export async function bytesOf(file: string): Promise<Uint8Array<ArrayBuffer>> {
  return new Uint8Array(await readFile(file));
}
