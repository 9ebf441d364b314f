/**
 * The decode stage over the native addon: one pooled decoder per codec configuration,
 * decoding from the GOP's keyframe and keeping only the clip's frames.
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
  constructor(private readonly maxIdle: number) {}

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
      decoder: await createDecoder({
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

  /** A drained decoder goes back idle; one left mid-run (or failed) is closed. */
  release(key: string, decoder: Decoder, reusable: boolean): void {
    if (reusable && this.idleCount < this.maxIdle) {
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
}

const pool = new DecoderPool(Math.max(2, availableParallelism() * 2));

function asDecoded(f: HostFrame): DecodedFrame {
  const data =
    f.data instanceof Uint8Array ? f.data : new Uint8Array(f.data.buffer, f.data.byteOffset, f.data.byteLength);
  return { data, pts: f.pts, width: f.width, height: f.height, format: f.format };
}

/** A host frame as it is; a device frame's host copy. No promise for host frames: decode calls return dozens. */
function decodedOf(f: Frame): DecodedFrame | Promise<DecodedFrame> {
  return f.kind === "host" ? asDecoded(f) : f.toHost().then(asDecoded);
}

/**
 * @example
 * const clip = await nativeDecode({ track, data, packets, keep, format: "rgb24", size: [224, 224], device: "auto", threads: 1 });
 */
export const nativeDecode: DecodeClip = (req) => defaults.decode(req);

/**
 * The clip and GOP-run decode stages routed by `router` (tests give one a capability table):
 * NVDEC where the device's decodes the codec, else the CPU, marked as a fallback for stats().
 *
 * @example
 * const { decode, openRun } = nativeDecoders(new DecodeRouter(() => table));
 */
export function nativeDecoders(router: DecodeRouter): { decode: DecodeClip; openRun: OpenRunDecoder } {
  return { decode: (req) => decodeRouted(router, req), openRun: (config) => openRunRouted(router, config) };
}

async function decodeRouted(router: DecodeRouter, req: DecodeRequest): Promise<DecodedClip> {
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
 *
 * @example
 * const run = await nativeOpenRun({ track, format: "rgb24", size: [224, 224], device: "auto", threads: 1 });
 */
export const nativeOpenRun: OpenRunDecoder = (config) => defaults.openRun(config);

async function openRunRouted(router: DecodeRouter, config: RunConfig): Promise<RunDecoder> {
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

/** Routed by what this host's devices decode (devices(), read once). */
const defaults = nativeDecoders(new DecodeRouter());

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
