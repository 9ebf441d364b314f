/** Flags of `npm run bench`; defaults keep a run on a 2-core machine to a few minutes. */
import { availableParallelism } from "node:os";
import { parseArgs } from "node:util";
import { describeReceived } from "../../common/errors.js";
import { defaultCpuSets, parseCpuList, type CpuSets } from "./cpu-sets.js";

export const ROW_NAMES = [
  "local",
  "ec_cold",
  "ec_warm",
  "ec_python",
  "ec_python_wheel",
  "naive",
  "download",
  "torch",
  "torchcodec_local",
  "torchcodec_local_sequential",
  "torchcodec_remote",
  "spdl",
] as const;
export type RowName = (typeof ROW_NAMES)[number];
/** What runs without --rows: all but the wheel row, whose build and install add a minute or more. */
export const DEFAULT_ROWS: readonly RowName[] = ROW_NAMES.filter((r) => r !== "ec_python_wheel");

/** Codecs the made videos take turns in. */
export const CODECS = ["h264", "hevc"] as const;
export type BenchCodec = (typeof CODECS)[number];

/** What a preset runs: ec's rows and the peers', not the per-clip ffmpeg and PyAV rows (1–4 clips/s at 640x360). */
const PRESET_ROWS = "local,ec_cold,ec_warm,torchcodec_local,torchcodec_local_sequential,torchcodec_remote,spdl";

/**
 * Videos as labs hold them (`--preset`): 60 fps gameplay-like content at a gameplay bitrate,
 * H.264 High with B-frames and HEVC in turn, long GOPs, clips resized to 224x224 as a training
 * run reads them. Any flag given with a preset overrides its value.
 */
export const PRESETS = {
  "gameplay-720p": {
    size: "1280x720",
    fps: "60",
    gop: "120",
    "bitrate-mbps": "8",
    seconds: "8",
    count: "4",
    codecs: "h264,hevc",
    resize: "224x224",
    clips: "64",
    // Random order decodes up to a GOP per clip: 32 clips keep each peer row to a minute or two.
    "slow-clips": "32",
    rows: PRESET_ROWS,
  },
  "gameplay-1080p": {
    size: "1920x1080",
    fps: "60",
    gop: "240",
    "bitrate-mbps": "12",
    seconds: "8",
    count: "4",
    codecs: "h264,hevc",
    resize: "224x224",
    clips: "64",
    // Random order decodes up to a GOP per clip: 32 clips keep each peer row to a minute or two.
    "slow-clips": "32",
    rows: PRESET_ROWS,
  },
} as const satisfies Record<string, Readonly<Record<string, string>>>;
export type PresetName = keyof typeof PRESETS;

export interface CompareConfig {
  /** The --preset the run started from, if any. */
  readonly preset: PresetName | undefined;
  /** Folder of .mp4 videos to use instead of made ones. */
  readonly videos: string | undefined;
  /** Made videos: how many, size, length, frame rate, keyframe interval. */
  readonly count: number;
  readonly width: number;
  readonly height: number;
  readonly seconds: number;
  readonly fps: number;
  readonly gop: number;
  /** Codecs of the made videos, in turn (video i is codecs[i % length]). */
  readonly codecs: readonly BenchCodec[];
  /**
   * Made videos' target bitrate in Mbit/s, from a busy, high-motion source (fixtures.ts); undefined:
   * testsrc2 at the encoder's default quality, as before the presets.
   */
  readonly bitrateMbps: number | undefined;
  /** Clips resized to [height, width] (ec's `size`; the peers' resize); undefined: native size. */
  readonly resize: readonly [number, number] | undefined;
  /** Clips per row, frames per clip, clips per batch. */
  readonly clips: number;
  readonly frames: number;
  readonly batch: number;
  readonly seed: number;
  /** Decoders/workers per row; default: the client side's cores. */
  readonly workers: number;
  readonly rttMs: number;
  readonly bandwidthMbps: number;
  /** Block size of the origin-cache in KiB; default 16, as the SDK's in-process cache (and `ec cache` for a store of ≤ 4 GiB). */
  readonly blockKib: number;
  /** Simulated training step per batch (a sleep), so stall ratio means "GPU idle". */
  readonly stepMs: number;
  /** TypeScript/Python run pairs the ec_python row alternates (0: one Python run, set against ec warm). */
  readonly pairs: number;
  /**
   * Clips of a separate copy of the videos streamed through the origin-cache before ec cold, not
   * measured: a deployed cache has served traffic before (JIT-compiled, its pools and connection
   * to the edge open). 0 measures a cache process fresh from start-up, as before 2026-12-01 21:00.
   */
  readonly cacheWarmupClips: number;
  /**
   * Clips the slow rows (naive, torch) decode: the first N of the local row's, each row set
   * against local runs of those same N clips. At 1–4 clips/s all 1,024 would take 5–12 minutes a
   * row, past the row timeout.
   */
  readonly slowClips: number;
  readonly rows: readonly RowName[];
  /** CPU sets of the client side (rows, origin-cache) and of the remote side (edge, WAN emulator). */
  readonly cpus: CpuSets;
  readonly json: boolean;
  readonly out: string;
}

export const USAGE = `usage: npm run bench -- [--preset ${Object.keys(PRESETS).join("|")}]
                      [--videos DIR] [--count N] [--size WxH] [--seconds S] [--fps F] [--gop G]
                      [--codecs ${CODECS.join(",")}] [--bitrate-mbps MBIT] [--resize WxH]
                      [--clips N] [--frames T] [--batch B] [--seed N] [--workers N]
                      [--rtt-ms MS] [--bandwidth-mbps MBIT] [--block-kib KIB] [--step-ms MS] [--pairs N]
                      [--cache-warmup-clips N] [--slow-clips N]
                      [--client-cpus LIST --remote-cpus LIST | --no-pin]
                      [--rows ${ROW_NAMES.join(",")}] [--out DIR] [--json]
`;

const STRING_FLAGS = [
  "preset",
  "codecs",
  "bitrate-mbps",
  "resize",
  "videos",
  "count",
  "size",
  "seconds",
  "fps",
  "gop",
  "clips",
  "frames",
  "batch",
  "seed",
  "workers",
  "rtt-ms",
  "bandwidth-mbps",
  "block-kib",
  "step-ms",
  "pairs",
  "cache-warmup-clips",
  "slow-clips",
  "rows",
  "out",
  "client-cpus",
  "remote-cpus",
];

function int(name: string, raw: string | undefined, fallback: number, min = 1): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || n < min)
    throw new Error(`Expected a number ≥ ${min} for --${name} but received ${describeReceived(raw)}`);
  return n;
}

/**
 * Parses argv into a config; every bad flag says what it expected.
 *
 * @example
 * parseCompareArgs(["--clips", "32", "--rows", "local,naive"]).rows; // ["local", "naive"]
 */
export function parseCompareArgs(argv: readonly string[]): CompareConfig {
  const { values: v } = parseArgs({
    args: [...argv],
    options: {
      ...Object.fromEntries(STRING_FLAGS.map((k) => [k, { type: "string" as const }])),
      json: { type: "boolean" },
      "no-pin": { type: "boolean" },
      help: { type: "boolean" },
    },
  }) as { values: Record<string, string | boolean | undefined> };
  if (v.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const presetName = v.preset as string | undefined;
  if (presetName !== undefined && !Object.hasOwn(PRESETS, presetName))
    throw new Error(
      `Expected --preset among ${Object.keys(PRESETS).join(", ")} but received ${describeReceived(presetName)}`,
    );
  const preset: Readonly<Record<string, string>> = presetName ? PRESETS[presetName as PresetName] : {};
  const s = (k: string): string | undefined => (v[k] as string | undefined) ?? preset[k];
  const size = /^(\d+)x(\d+)$/.exec(s("size") ?? "640x360");
  if (!size) throw new Error(`Expected WxH (e.g. 640x360) for --size but received ${describeReceived(s("size"))}`);
  const resize = s("resize") === undefined ? undefined : /^(\d+)x(\d+)$/.exec(s("resize")!);
  if (resize === null || (resize && (Number(resize[1]) < 1 || Number(resize[2]) < 1)))
    throw new Error(`Expected WxH (e.g. 224x224) for --resize but received ${describeReceived(s("resize"))}`);
  const codecs = (s("codecs") ?? "h264").split(",").filter(Boolean);
  if (codecs.length === 0 || codecs.some((c) => !(CODECS as readonly string[]).includes(c)))
    throw new Error(`Expected codecs among ${CODECS.join(", ")} but received ${describeReceived(s("codecs"))}`);
  const rows = (s("rows") ?? DEFAULT_ROWS.join(",")).split(",").filter(Boolean);
  for (const r of rows) {
    if (!(ROW_NAMES as readonly string[]).includes(r))
      throw new Error(`Expected rows among ${ROW_NAMES.join(", ")} but received ${describeReceived(r)}`);
  }
  // The other rows decode the clips the local row chose, so it always runs.
  if (!rows.includes("local")) rows.unshift("local");
  let cpus: CpuSets = defaultCpuSets();
  if (v["no-pin"]) cpus = { ...cpus, unpinned: "--no-pin" };
  else if (s("client-cpus") !== undefined || s("remote-cpus") !== undefined) {
    if (s("client-cpus") === undefined || s("remote-cpus") === undefined)
      throw new Error("Expected --client-cpus and --remote-cpus together but received one of them");
    cpus = { client: parseCpuList(s("client-cpus")!), remote: parseCpuList(s("remote-cpus")!) };
  }
  return {
    preset: presetName as PresetName | undefined,
    videos: s("videos"),
    count: int("count", s("count"), 16),
    width: Number(size[1]),
    height: Number(size[2]),
    seconds: int("seconds", s("seconds"), 64),
    fps: int("fps", s("fps"), 30),
    gop: int("gop", s("gop"), 30),
    codecs: codecs as BenchCodec[],
    bitrateMbps: s("bitrate-mbps") === undefined ? undefined : int("bitrate-mbps", s("bitrate-mbps"), 1),
    resize: resize ? [Number(resize[2]), Number(resize[1])] : undefined,
    // Every keyframe-aligned clip of the default videos (16 × 64 s, a GOP a second): 1,024 clips a
    // row, so steady state dominates even where a row streams 70 clips/s (15 s a row).
    clips: int("clips", s("clips"), 1024),
    frames: int("frames", s("frames"), 16),
    batch: int("batch", s("batch"), 4),
    seed: int("seed", s("seed"), 1, 0),
    workers: int("workers", s("workers"), Math.max(1, cpus.unpinned ? availableParallelism() : cpus.client.length)),
    rttMs: int("rtt-ms", s("rtt-ms"), 50, 0),
    bandwidthMbps: int("bandwidth-mbps", s("bandwidth-mbps"), 200),
    blockKib: int("block-kib", s("block-kib"), 16, 4),
    stepMs: int("step-ms", s("step-ms"), 0, 0),
    pairs: int("pairs", s("pairs"), 3, 0),
    cacheWarmupClips: int("cache-warmup-clips", s("cache-warmup-clips"), 64, 0),
    slowClips: int("slow-clips", s("slow-clips"), 128),
    rows: ROW_NAMES.filter((r) => rows.includes(r)),
    cpus,
    json: v.json === true,
    out: s("out") ?? "bench/results",
  };
}
