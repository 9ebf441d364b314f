/**
 * The one options object of `open()`, validated with zod before any I/O.
 *
 * Two groups, as a researcher thinks of them:
 * - what to iterate: `frames`, `stride`, `hop`, `align`, `size`, `format`, `rotate`, `track`, `limit`, `labels`, `filter`;
 * - how to iterate: `token`, `edgeKeys`, `cache`, `seed`, `epoch`, `shuffle`, `shuffleBuffer`, `rank`, `world`,
 *   `batch`, `dropLast`, `prefetch`, `workers`, `device`, `tableCacheBytes`, `resume`, `onError`;
 *   and for r2:// / s3:// datasets read without the edge: `endpoint`, `region`, `credentials`, `forcePathStyle`.
 */
import { availableParallelism } from "node:os";
import { z } from "zod";
import { describeReceived } from "../common/errors.js";
import { InvalidOptionError, type SdkError } from "./errors.js";
import type { ClipInfo } from "./clip-info.js";
import { Checkpoint } from "./state/checkpoint.js";
import { labelOptionHooks } from "./labels/option-hooks.js";
import type { LabelsSpec } from "./labels/registry.js";
import { knownEdgesPath } from "./source/edge-keys.js";
import { EdgeKeysSchema, edgeKeysFromText } from "./source/edge-keys-option.js";
import { pickS3Env } from "./source/s3/s3-env.js";
import type { BucketOptions, SourceOptions } from "./source/source.js";
import { S3OptionsSchema } from "./source/s3/s3-url.js";

const expected = (what: string, name: string) => (iss: { input?: unknown }) =>
  `Expected ${what} for ${name} but received ${describeReceived(iss.input)}`;

const positiveInt = (name: string) => {
  const error = expected("a positive integer", name);
  return z.number({ error }).int({ error }).positive({ error });
};
const nonNegativeInt = (name: string) => {
  const error = expected("a non-negative integer", name);
  return z.number({ error }).int({ error }).nonnegative({ error });
};
const fn = <T>(name: string) => z.custom<T>((v) => typeof v === "function", { error: expected("a function", name) });

/** Extra per-clip fields (e.g. in-stream labels) computed after decode; the labeler stage calls it. */
export type LabelsHook = (
  clip: ClipInfo,
  frames: unknown,
) => Record<string, unknown> | Promise<Record<string, unknown>>;
/** Keeps a clip when it returns true; a dropped clip counts as consumed for resume. */
export type FilterHook = (clip: ClipInfo) => boolean | Promise<boolean>;
/** Called once per skipped clip (corrupt object, failed fetch or decode); the stream goes on. */
export type ErrorHook = (err: SdkError, clip: { key: string; start: number } | undefined) => void;

const DeviceSchema = z.string().regex(/^(cpu|auto|cuda(:\d+)?)$/, {
  error: expected('"cpu", "auto" or "cuda:N"', "device"),
});

/**
 * The schema of every option; defaults are filled in after environment defaults (RANK, WORLD_SIZE).
 * `defaultFrom` marks a default that is no constant (the environment, the machine, the checkpoint):
 * other clients (the Python one) leave those unset rather than repeat a value.
 */
export const OpenOptionsSchema = z
  .object({
    // — what to iterate —
    /** Frames per clip. */
    frames: positiveInt("frames").default(16),
    /** Step between consecutive frames of a clip (1 = every frame). */
    stride: positiveInt("stride").default(1),
    /** Frames between clip starts; default: the clip's span, so clips do not overlap. */
    hop: positiveInt("hop").optional(),
    /** "exact" (default): a clip every `hop` frames, every frame covered, clips of one GOP cut from one decode; "keyframe": clips only on keyframes. */
    align: z.enum(["keyframe", "exact"], { error: expected('"keyframe" or "exact"', "align") }).default("exact"),
    /** Output [height, width]; default: the video's own size. */
    size: z
      .tuple([positiveInt("size[0]"), positiveInt("size[1]")], { error: expected("[height, width]", "size") })
      .optional(),
    /** "rgb24": [B, T, H, W, 3] uint8; "native": the decoder's pixel format, unconverted (for byte-exact checks). */
    format: z.enum(["rgb24", "native"], { error: expected('"rgb24" or "native"', "format") }).default("rgb24"),
    /** "none": frames as coded; "auto": turned upright by the video's rotation (display matrix), as ffmpeg's autorotate does. */
    rotate: z.enum(["none", "auto"], { error: expected('"none" or "auto"', "rotate") }).default("none"),
    /** Which video track of objects with several (0-based, among tracks of a supported codec; audio is ignored). */
    track: nonNegativeInt("track").default(0),
    /** At most this many clips for this rank. */
    limit: positiveInt("limit").optional(),
    /** A hook of one's own, or labelers to run: true (every built-in), names, or { name: thresholds | function }. */
    labels: z
      .union(
        [
          fn<LabelsHook>("labels"),
          z.custom<LabelsSpec>(
            (v) => v === true || v === false || Array.isArray(v) || (v !== null && typeof v === "object"),
          ),
        ],
        {
          error: expected("a function, true, a list of labeler names or an object of labeler settings", "labels"),
        },
      )
      .optional(),
    /** A predicate, or "drop" (the default with labelers: clips failing validation are dropped) or "tag" (keep all). */
    filter: z
      .union([fn<FilterHook>("filter"), z.enum(["drop", "tag"])], {
        error: expected('a function, "drop" or "tag"', "filter"),
      })
      .optional(),

    // — how to iterate —
    /** Bearer token for the edge; default: the EC_TOKEN environment variable. */
    token: z
      .string({ error: expected("a string", "token") })
      .min(1, { error: expected("a non-empty string", "token") })
      .optional(),
    /**
     * The edge's Ed25519 public keys, as `ec keys URL` prints them (several while it rotates):
     * manifests and tables signed by any other key are refused. Default: the EC_EDGE_KEYS
     * environment variable, else the keys first seen for the edge's origin (known-edges.json).
     */
    edgeKeys: EdgeKeysSchema.optional(),
    /** origin-cache URL (e.g. http://127.0.0.1:7070); default: an in-process cache. */
    cache: z.url({ error: expected("an http(s) URL", "cache") }).optional(),
    /**
     * With a loopback `cache`: read its hits from its slab files directly (POST /v1/locate, then
     * pread) instead of over HTTP. Default on, unless EC_CACHE_LOCAL=0.
     */
    cacheLocal: z.boolean({ error: expected("a boolean", "cacheLocal") }).optional(),
    /** In-process cache budget in bytes (only without `cache`). */
    cacheBytes: positiveInt("cacheBytes").default(256 << 20),
    /** With `resume`, the checkpoint's seed and epoch are the defaults (another is ERR_RESUME_MISMATCH). */
    seed: nonNegativeInt("seed").default(0).meta({ defaultFrom: "resume" }),
    epoch: nonNegativeInt("epoch").default(0).meta({ defaultFrom: "resume" }),
    /** Name of a registered shuffle algorithm ("shard-buffer", "global", "none") or false. */
    shuffle: z
      .union([z.string(), z.literal(false)], { error: expected("a shuffle name or false", "shuffle") })
      .default("shard-buffer"),
    shuffleBuffer: positiveInt("shuffleBuffer").default(256),
    rank: nonNegativeInt("rank").default(0).meta({ defaultFrom: "RANK" }),
    world: positiveInt("world").default(1).meta({ defaultFrom: "WORLD_SIZE" }),
    batch: positiveInt("batch").default(1),
    /** Drop a last, smaller batch. */
    dropLast: z.boolean({ error: expected("a boolean", "dropLast") }).default(false),
    /** Clips fetched and decoded ahead of the consumer: the memory bound. */
    prefetch: positiveInt("prefetch").default(8),
    /** Clips decoded in parallel; default: the cores of this machine. */
    workers: positiveInt("workers")
      .default(Math.max(1, availableParallelism()))
      .meta({ defaultFrom: "availableParallelism" }),
    device: DeviceSchema.default("auto"),
    /**
     * Bytes of the dataset table's pages and directory pages held at once where open() reads the
     * table page by page: over it the least recently used go and are read again when needed
     * (`stats().table_cache` counts them); one that cannot hold a window of pages is ERR_TABLE_CACHE_TOO_SMALL.
     */
    tableCacheBytes: positiveInt("tableCacheBytes").default(64 << 20),
    /** A checkpoint from `ds.state()`, or the checkpoints of every rank. */
    resume: z
      .union([Checkpoint, z.array(Checkpoint).min(1)], { error: expected("a checkpoint from ds.state()", "resume") })
      .optional(),
    onError: fn<ErrorHook>("onError").optional(),

    // — where the bytes are, for r2:// and s3:// datasets read without the edge —
    ...S3OptionsSchema.shape,
  })
  .strict()
  .refine((o) => o.rank < o.world, {
    error: (iss) => {
      const o = iss.input as { rank: number; world: number };
      return `Expected rank below world (${o.world}) but received ${o.rank}`;
    },
  });

export type OpenOptions = z.input<typeof OpenOptionsSchema>;
/** The bucket options, given at the top level of `open()`'s; resolved, they are only in `source.bucket`. */
type BucketKey = "endpoint" | "region" | "credentials" | "forcePathStyle";
export type ResolvedOptions = Readonly<
  Omit<z.output<typeof OpenOptionsSchema>, "labels" | "filter" | BucketKey> & {
    labels?: LabelsHook;
    filter?: FilterHook;
    /** What the dataset's source is opened with, the environment it defaults from included. */
    source: SourceOptions;
  }
>;

const defined = <T extends object>(o: T): T =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

function envInt(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  if (!/^\d+$/.test(raw))
    throw new InvalidOptionError(`Expected a non-negative integer for ${name} but received ${describeReceived(raw)}`);
  return Number(raw);
}

/**
 * Validates `open()` options and fills in defaults (rank/world from RANK/WORLD_SIZE, token from EC_TOKEN,
 * edgeKeys from EC_EDGE_KEYS, cacheLocal false for EC_CACHE_LOCAL=0). The one place `open()` reads
 * the environment: what the sources take from it is picked here too and passed down in `source`.
 *
 * @example
 * const o = resolveOptions({ frames: 8, batch: 4 }); // o.stride === 1, o.world === 1
 */
export function resolveOptions(input: OpenOptions = {}, env: NodeJS.ProcessEnv = process.env): ResolvedOptions {
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    throw new InvalidOptionError(`Expected an options object but received ${describeReceived(input)}`);
  }
  const withEnv: Record<string, unknown> = { ...input };
  if (withEnv.rank === undefined) withEnv.rank = envInt(env, "RANK");
  if (withEnv.world === undefined) withEnv.world = envInt(env, "WORLD_SIZE");
  if (withEnv.token === undefined && env.EC_TOKEN) withEnv.token = env.EC_TOKEN;
  if (withEnv.edgeKeys === undefined && env.EC_EDGE_KEYS) withEnv.edgeKeys = edgeKeysFromText(env.EC_EDGE_KEYS);
  if (withEnv.cacheLocal === undefined && env.EC_CACHE_LOCAL === "0") withEnv.cacheLocal = false;
  for (const k of Object.keys(withEnv)) if (withEnv[k] === undefined) delete withEnv[k];
  const parsed = OpenOptionsSchema.safeParse(withEnv);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const message =
      issue.code === "unrecognized_keys"
        ? `Expected only known options but received ${issue.keys.map((k) => JSON.stringify(k)).join(", ")}`
        : issue.message;
    throw new InvalidOptionError(message);
  }
  const { endpoint, region, credentials, forcePathStyle, ...o } = parsed.data;
  const hooks = labelOptionHooks<ClipInfo>(o.labels, o.filter);
  const bucket: BucketOptions = { ...defined({ endpoint, region, credentials, forcePathStyle }), env: pickS3Env(env) };
  const source: SourceOptions = {
    ...defined({ cache: o.cache, cacheLocal: o.cacheLocal, token: o.token, edgeKeys: o.edgeKeys }),
    cacheBytes: o.cacheBytes,
    rank: o.rank,
    knownEdges: knownEdgesPath(env),
    bucket: Object.freeze(bucket),
  };
  return Object.freeze({ ...o, labels: hooks.labels, filter: hooks.filter, source: Object.freeze(source) });
}

/** Frames a clip spans in its object: first to last frame inclusive. */
export function clipSpan(o: Pick<ResolvedOptions, "frames" | "stride">): number {
  return (o.frames - 1) * o.stride + 1;
}
