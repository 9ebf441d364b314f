/**
 * The decode stage over the native addon: one pooled decoder per codec configuration,
 * decoding from the GOP's keyframe and keeping only the clip's frames.
 *
 * Each stream gets its own decoders (`nativeDecoders()`, made by `open()` and closed with the
 * Dataset), so closing a stream frees its codecs and streams of one process share no state.
 * No process-wide cap on concurrent decodes is kept here: each stream bounds its own (`workers`
 * clip decodes, GOP runs in stream.ts), and the native calls of every stream run on libuv's one
 * thread pool (`UV_THREADPOOL_SIZE`), which already caps the decode threads of the process.
 */
import { availableParallelism } from "node:os";
import {
  createDecoder,
  DecodeRouter,
  decodeImage,
  type Decoder,
  type DeviceFrame,
  type Frame,
  type HostFrame,
} from "../../native/index.js";
import type { VideoTrackV1 } from "../../common/schema/index.js";
import { SdkError } from "../errors.js";
import type { DecodeClip, DecodedClip, DecodedFrame, DecodeImage, DecodeRequest } from "./decode.js";
import type { OpenRunDecoder, RunConfig, RunDecoder, RunFrame } from "./gop-decode.js";

/** The settings a pooled decoder is opened with. */
type PoolConfig = Pick<DecodeRequest, "track" | "format" | "size" | "threads">;

/** Idle decoders by configuration; a clip (or a GOP run) borrows one and gives it back drained. */
class DecoderPool {
  private readonly idle = new Map<string, Decoder[]>();
  private idleCount = 0;
  private closed = false;
  constructor(
    private readonly maxIdle: number,
    private readonly create: typeof createDecoder,
  ) {}

  private keyOf(track: VideoTrackV1, req: PoolConfig, device: string): string {
    return [
      track.codec,
      track.width,
      track.height,
      Buffer.from(track.extradata).toString("base64"),
      req.format,
      req.size?.join("x") ?? "",
      device,
      req.threads,
    ].join("|");
  }

  async acquire(req: PoolConfig, device: "cpu" | `cuda:${number}`): Promise<{ decoder: Decoder; key: string }> {
    const { track } = req;
    const key = this.keyOf(track, req, device);
    const decoder = this.idle.get(key)?.pop();
    if (decoder) {
      this.idleCount--;
      return { decoder, key };
    }
    return {
      key,
      decoder: await this.create({
        codec: track.codec,
        extradata: track.extradata,
        width: track.width,
        height: track.height,
        device,
        threads: req.threads,
        output: req.format === "native" ? "native" : "rgb24",
        ...(req.size ? { resize: [req.size[0], req.size[1]] as const } : {}),
      }),
    };
  }

  /** A drained decoder goes back idle; one left mid-run (or failed), or given back after close(), is closed. */
  release(key: string, decoder: Decoder, reusable: boolean): void {
    if (reusable && !this.closed && this.idleCount < this.maxIdle) {
      const list = this.idle.get(key) ?? [];
      list.push(decoder);
      this.idle.set(key, list);
      this.idleCount++;
    } else {
      void decoder.close();
    }
  }

  async use<R>(req: PoolConfig, device: "cpu" | `cuda:${number}`, fn: (d: Decoder) => Promise<R>): Promise<R> {
    const { decoder, key } = await this.acquire(req, device);
    let healthy = false;
    try {
      const out = await fn(decoder);
      healthy = true;
      return out;
    } finally {
      this.release(key, decoder, healthy);
    }
  }

  /** Closes the idle decoders; those still borrowed are closed when given back. */
  async close(): Promise<void> {
    this.closed = true;
    const idle = [...this.idle.values()].flat();
    this.idle.clear();
    this.idleCount = 0;
    await Promise.all(idle.map((d) => d.close()));
  }
}

function asDecoded(f: HostFrame): DecodedFrame {
  const data =
    f.data instanceof Uint8Array ? f.data : new Uint8Array(f.data.buffer, f.data.byteOffset, f.data.byteLength);
  return { data, pts: f.pts, width: f.width, height: f.height, format: f.format };
}

/** A host frame as it is; a device frame's host copy. No promise for host frames: decode calls return dozens. */
function decodedOf(f: Frame): DecodedFrame | Promise<DecodedFrame> {
  return f.kind === "host" ? asDecoded(f) : f.toHost().then(asDecoded);
}

/** How a stream's native decoders are made. */
export interface NativeDecodersOptions {
  /** Sends each decode to NVDEC or the CPU; default: by what this host's devices decode (tests give one a capability table). */
  readonly router?: DecodeRouter;
  /** Drained decoders kept for reuse, all configurations together; default: twice the cores (at least 2). */
  readonly maxIdle?: number;
  /** Opens a decoder; default: the addon's createDecoder (tests wrap it to see what a stream opened). */
  readonly create?: typeof createDecoder;
}

/** One stream's clip and GOP-run decode stages over one decoder pool of its own. */
export interface NativeDecoders {
  readonly decode: DecodeClip;
  readonly openRun: OpenRunDecoder;
  /** Frees the pooled decoders; any still borrowed are freed as they come back. Call once the stream settled. */
  close(): Promise<void>;
}

/**
 * The native decode stages of one stream: clips routed by `router` (NVDEC where the device's
 * decodes the codec, else the CPU, marked as a fallback for stats()), decoders pooled for this
 * stream alone.
 *
 * @example
 * const natives = nativeDecoders();
 * const clip = await natives.decode({ track, data, packets, keep, format: "rgb24", size: [224, 224], device: "auto", threads: 1 });
 * await natives.close();
 */
export function nativeDecoders(options: NativeDecodersOptions = {}): NativeDecoders {
  const router = options.router ?? hostRouter();
  const pool = new DecoderPool(
    options.maxIdle ?? Math.max(2, availableParallelism() * 2),
    options.create ?? createDecoder,
  );
  return {
    decode: (req) => decodeRouted(pool, router, req),
    openRun: (config) => openRunRouted(pool, router, config),
    close: () => pool.close(),
  };
}

/** What this host's devices decode is a fact of the host: probed (devices()) once per process, on first use. */
let host: DecodeRouter | undefined;
const hostRouter = () => (host ??= new DecodeRouter());

async function decodeRouted(pool: DecoderPool, router: DecodeRouter, req: DecodeRequest): Promise<DecodedClip> {
  const { device, fallback } = router.route(req.device, req.track.codec);
  const dropBefore = Math.min(...req.keep);
  const into = req.into ? new Map(req.keep.map((pts, i) => [pts, req.into![i]!] as const)) : undefined;
  const { frames, decoded } = await pool.use(req, device, (d) =>
    d.decodeRun(
      { data: req.data, samples: req.packets },
      { dropBefore, recovering: req.recovering ?? false, ...(into ? { into } : {}) },
    ),
  );
  const byPts = new Map<number, Frame>();
  for (const f of frames) byPts.set(f.pts, f);
  const kept: DecodedFrame[] = [];
  const gpuFrames: DeviceFrame[] = [];
  for (const pts of req.keep) {
    const f = byPts.get(pts);
    if (!f) {
      throw new SdkError(
        "ERR_DECODE_SHORT",
        `Expected a frame at pts ${pts} but the decoder returned ${frames.length} frames without it`,
      );
    }
    // Device tensors are stacked on the host for now: the copy keeps one code path for batches.
    const d = decodedOf(f);
    kept.push(d instanceof Promise ? await d : d);
    if (f.kind === "device") gpuFrames.push(f);
  }
  return {
    frames: kept,
    device,
    decoded,
    ...(gpuFrames.length > 0 ? { gpuFrames } : {}),
    ...(fallback ? { fallback } : {}),
  };
}

/**
 * A pooled native decoder for one GOP run (GopDecoder): packets are fed without draining
 * until the run's end, so each frame of the GOP is decoded once.
 */
async function openRunRouted(pool: DecoderPool, router: DecodeRouter, config: RunConfig): Promise<RunDecoder> {
  const { device, fallback } = router.route(config.device, config.track.codec);
  const { decoder, key } = await pool.acquire(config, device);
  return {
    device,
    ...(fallback ? { fallback } : {}),
    async feed(data, packets, o) {
      const { frames, decoded, fed } = await decoder.decodeRun({ data, samples: packets }, o);
      const out: RunFrame[] = [];
      for (const f of frames) {
        const d = decodedOf(f);
        out.push(f.kind === "device" ? { frame: await d, gpu: f } : { frame: d as DecodedFrame });
      }
      return { frames: out, decoded, fed };
    },
    release: (drained) => pool.release(key, decoder, drained),
  };
}

/**
 * Images decode on the CPU (libavcodec's mjpeg, png and webp decoders) into one rgb24 frame.
 *
 * @example
 * const still = await nativeDecodeImage({ data, format: "jpeg", output: "rgb24", size: [224, 224] });
 */
export const nativeDecodeImage: DecodeImage = async (req) => {
  const frame = await decodeImage(req.data, {
    format: req.format,
    output: req.output,
    ...(req.size ? { resize: [req.size[0], req.size[1]] as const } : {}),
  });
  return { frames: [asDecoded(frame)], device: "cpu", still: true };
};
