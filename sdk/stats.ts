import { z } from "zod";
import type { TableCacheStats } from "../common/table-cache.js";
import type { SourceStats } from "./source/source.js";

/** What `ds.stats()` and `ec stream --json` report; snake_case because it is a wire shape. */
export const StreamStats = z.object({
  clips: z.number().int(),
  frames: z.number().int(),
  /** Frames the decoder produced, dropped ones included: decoded_frames / frames is the decode cost per frame delivered. */
  decoded_frames: z.number().int(),
  /** Bytes pulled from upstream, cache rounding included. */
  bytes_fetched: z.number(),
  /** Bytes of the samples fed to the decoder: from each GOP's keyframe to the clip's last sample, once per GOP run. */
  bytes_needed: z.number(),
  /** Bytes of decoded frames handed to the consumer. */
  bytes_delivered: z.number(),
  seconds: z.number(),
  /** Seconds from the start of open() to the first batch handed to the consumer; null before it. */
  first_batch_s: z.number().nullable(),
  /** Time the consumer waited for a batch over wall time since it first asked. */
  stall_ratio: z.number(),
  cache_hit_ratio: z.number(),
  device: z.string(),
  /** Clips decoded on the CPU because the CUDA device's NVDEC lacks their codec (AV1 on an H100/H200), and those codecs. */
  decode_fallbacks: z.object({ count: z.number().int(), codecs: z.array(z.string()) }),
  /** Skipped clips or objects by error code. */
  errors: z.record(z.string(), z.number().int().positive()),
  /**
   * Where open() reads the table page by page: the bytes of table pages and directory pages held
   * (now, at most), the cap (`tableCacheBytes`), and the pages dropped under it and read again (thrash).
   */
  table_cache: z
    .object({
      cap: z.number(),
      bytes: z.number(),
      page_bytes: z.number(),
      directory_bytes: z.number(),
      peak_bytes: z.number(),
      peak_page_bytes: z.number(),
      peak_directory_bytes: z.number(),
      pages: z.number().int(),
      directory_pages: z.number().int(),
      evicted_pages: z.number().int(),
      evicted_directory_pages: z.number().int(),
      reread_pages: z.number().int(),
      reread_directory_pages: z.number().int(),
    })
    .optional(),
});
export type StreamStats = Readonly<z.infer<typeof StreamStats>>;

/** Mutable counters behind `ds.stats()`. */
export class StatsRecorder {
  clips = 0;
  frames = 0;
  decodedFrames = 0;
  bytesNeeded = 0;
  bytesDelivered = 0;
  device = "none";
  readonly errors: Record<string, number> = {};
  private fallbacks = 0;
  private readonly fallbackCodecs = new Set<string>();
  private startedAt: number | undefined;
  private endedAt: number | undefined;
  private waitMs = 0;
  private waitingSince: number | undefined;
  private firstBatchAt: number | undefined;
  /** When open() started (same clock as `now`): first_batch_s counts from it. */
  openedAt: number | undefined;
  /** The table's cache where open() reads the table page by page. */
  tableCache: (() => TableCacheStats) | undefined;

  constructor(
    private readonly source: () => SourceStats,
    private readonly now: () => number = () => performance.now(),
  ) {}

  error(code: string): void {
    this.errors[code] = (this.errors[code] ?? 0) + 1;
  }
  /** A clip of `codec` decoded on the CPU instead of NVDEC. */
  fallback(codec: string): void {
    this.fallbacks++;
    this.fallbackCodecs.add(codec);
  }
  /** The consumer asked for a batch. */
  waitStart(): void {
    const t = this.now();
    this.startedAt ??= t;
    this.waitingSince = t;
  }
  /** A batch reached the consumer. */
  delivered(): void {
    this.firstBatchAt ??= this.now();
  }
  /** The consumer got its batch (or the end). */
  waitEnd(): void {
    if (this.waitingSince !== undefined) this.waitMs += this.now() - this.waitingSince;
    this.waitingSince = undefined;
  }
  end(): void {
    this.endedAt ??= this.now();
  }

  snapshot(): StreamStats {
    const s = this.source();
    const wallMs = this.startedAt === undefined ? 0 : (this.endedAt ?? this.now()) - this.startedAt;
    const waiting = this.waitingSince === undefined ? 0 : this.now() - this.waitingSince;
    const lookups = s.cacheHits + s.cacheMisses;
    return {
      clips: this.clips,
      frames: this.frames,
      decoded_frames: this.decodedFrames,
      bytes_fetched: s.bytesFetched,
      bytes_needed: this.bytesNeeded,
      bytes_delivered: this.bytesDelivered,
      seconds: wallMs / 1000,
      first_batch_s:
        this.firstBatchAt === undefined
          ? null
          : (this.firstBatchAt - (this.openedAt ?? this.startedAt ?? this.firstBatchAt)) / 1000,
      stall_ratio: wallMs > 0 ? Math.min(1, (this.waitMs + waiting) / wallMs) : 0,
      cache_hit_ratio: lookups > 0 ? s.cacheHits / lookups : 0,
      device: this.device,
      decode_fallbacks: { count: this.fallbacks, codecs: [...this.fallbackCodecs].sort() },
      errors: { ...this.errors },
      ...(this.tableCache ? { table_cache: this.tableCache() } : {}),
    };
  }
}
