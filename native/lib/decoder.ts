import type { RawDecoder } from "./binding-types.js";
import { NativeError, NativeErrorCode, argumentError, fromNative } from "./errors.js";
import { deviceFrames, hostFrames, type Frame } from "./frames.js";
import { loadBinding } from "./load.js";
import { validateDecoderOptions, type DecoderOptions, type ValidatedDecoderOptions } from "./options.js";
import { packPackets, type Packets } from "./packets.js";

export interface DecodeOptions {
  /** Frames with pts below this are decoded (others depend on them) but not returned. */
  readonly dropBefore?: number;
  /**
   * false: keep the decoder's state after these packets, so the next call continues the same
   * run (its first packet need not be a keyframe); frames still being reordered come out then.
   * Default true: drain every frame and reset for an unrelated clip.
   */
  readonly drain?: boolean;
  /**
   * The run's first packet is an H.264 recovery point that is not an IDR (intra refresh, open
   * GOP): pictures before the first intact one may reference frames before it, so their decode
   * errors are tolerated and they are never returned (their pts must lie below `dropBefore`).
   * From the first intact picture on, damage fails the call as always. Only on a run's first call,
   * and only on a decoder opened with `threads: 1` (frame threads: ERR_INVALID_ARGUMENT).
   */
  readonly recovering?: boolean;
  /**
   * Caller memory to write kept frames into, by pts: each such host frame is converted straight
   * into its region (e.g. its place in a batch tensor) and its `data` is a view of it, so the
   * frame is written once and no memory is allocated for it. A frame whose region has another
   * size than the converted frame, or one not aligned to its dtype, lands where it would without
   * a region (as do device frames); callers tell by `data.buffer`. The regions must stay
   * untouched until the call settles.
   */
  readonly into?: ReadonlyMap<number, Uint8Array>;
  /**
   * With `drain: false`: once a frame with pts ≥ `until` is out, the call sends no more packets
   * and returns (every frame up to it is out: frames come in presentation order). `fed` says how
   * many packets went in; the next call of the run starts at the first one left. So a run feeds
   * no packet past the last frame a clip waits for, whatever the reorder delay.
   */
  readonly until?: number;
}

/** What one decode call produced. */
export interface DecodeRun {
  /** The frames kept (pts ≥ dropBefore), in presentation order. */
  readonly frames: Frame[];
  /** Frames the codec produced in this call, dropped ones included. */
  readonly decoded: number;
  /** Packets sent to the codec: all of them, but after an `until` frame came out. */
  readonly fed: number;
  /**
   * Bytes of native host frames copied or moved out of where the decoder wrote them (0 for frames
   * decoded in place; a 1080p frame, coded as 1088 rows, moves its chroma planes: 1,036,800 bytes).
   */
  readonly copied: number;
}

/**
 * Decodes clips. Each decode() call is one clip: it starts at a keyframe, and at its end
 * the decoder is drained so every reordered frame comes out, in presentation order.
 * Calls on one decoder run one at a time (queued); use several decoders for parallelism.
 */
export class Decoder {
  readonly options: Readonly<ValidatedDecoderOptions>;
  #raw: RawDecoder | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  /** The last call left the codec mid-run (drain: false). */
  #continuing = false;

  /** @internal use createDecoder() */
  constructor(raw: RawDecoder, options: ValidatedDecoderOptions) {
    this.#raw = raw;
    this.options = options;
  }

  /**
   * Decodes one clip's packets into frames (host frames on "cpu", device frames on "cuda:N").
   *
   * @example
   * const frames = await decoder.decode(packets, { dropBefore: clipStartPts });
   */
  async decode(packets: Packets, options: DecodeOptions = {}): Promise<Frame[]> {
    return (await this.decodeRun(packets, options)).frames;
  }

  /**
   * decode(), plus how many frames the codec produced (dropped ones included).
   *
   * @example
   * const { frames, decoded } = await decoder.decodeRun(packets, { dropBefore, drain: false });
   */
  decodeRun(packets: Packets, options: DecodeOptions = {}): Promise<DecodeRun> {
    const { dropBefore, drain = true, recovering = false, into, until } = options;
    let targets: { pts: Float64Array; views: Uint8Array[] } | undefined;
    try {
      if (dropBefore !== undefined && !Number.isSafeInteger(dropBefore))
        throw argumentError("an integer pts", "dropBefore", dropBefore);
      if (typeof drain !== "boolean") throw argumentError("a boolean", "drain", drain);
      if (typeof recovering !== "boolean") throw argumentError("a boolean", "recovering", recovering);
      if (until !== undefined && !Number.isSafeInteger(until)) throw argumentError("an integer pts", "until", until);
      if (until !== undefined && drain) throw argumentError("drain: false with until", "drain", drain);
      if (into !== undefined) targets = packTargets(into);
    } catch (error) {
      // Always a promise: callers handle bad packets and bad bytes in one place.
      return Promise.reject(error);
    }
    const run = async (): Promise<DecodeRun> => {
      const raw = this.#raw;
      if (!raw) throw new NativeError(NativeErrorCode.DecoderClosed, "The decoder is closed");
      if (recovering && this.#continuing)
        throw argumentError("recovering: true only on a run's first call", "recovering", recovering);
      // Only a call that continues an undrained run may start between keyframes.
      const packed = packPackets(packets, !this.#continuing);
      this.#continuing = false;
      try {
        const out = await raw.decode(
          packed.data,
          packed.table,
          packed.keyframes,
          dropBefore ?? null,
          drain,
          recovering,
          targets?.pts,
          targets?.views,
          until ?? null,
        );
        this.#continuing = !drain;
        return {
          frames: "device" in out ? deviceFrames(out.device) : hostFrames(out, targets?.views),
          decoded: out.decoded,
          fed: out.fed,
          copied: out.copied,
        };
      } catch (error) {
        throw fromNative(error);
      }
    };
    const result = this.#queue.then(run, run);
    this.#queue = result.catch(() => undefined);
    return result;
  }

  /** Frees the codec now instead of at garbage collection; waits for queued calls. */
  async close(): Promise<void> {
    await this.#queue;
    this.#raw?.close();
    this.#raw = undefined;
  }
}

/** The `into` map as the binding takes it: pts and regions side by side. */
function packTargets(into: ReadonlyMap<number, Uint8Array>): { pts: Float64Array; views: Uint8Array[] } {
  if (!(into instanceof Map)) throw argumentError("a Map of pts to Uint8Array", "into", into);
  const pts = new Float64Array(into.size);
  const views: Uint8Array[] = [];
  for (const [p, view] of into) {
    if (!Number.isSafeInteger(p)) throw argumentError("integer pts as keys", "into", p);
    if (!(view instanceof Uint8Array)) throw argumentError("a Uint8Array region", `into[${p}]`, view);
    pts[views.length] = p;
    views.push(view);
  }
  return { pts, views };
}

/**
 * Opens a decoder for one track's codec configuration. Arguments are checked before the
 * addon is touched; opening runs off the event loop.
 *
 * @example
 * const decoder = await createDecoder({ codec: "h264", extradata: track.extradata, width: 1280, height: 720, device: "cpu", output: "rgb24" });
 */
export async function createDecoder(options: DecoderOptions): Promise<Decoder> {
  const o = validateDecoderOptions(options);
  const binding = loadBinding();
  try {
    const raw = await binding.openDecoder({
      codec: o.codec,
      extradata: o.extradata,
      width: o.width,
      height: o.height,
      device: o.device.backend,
      deviceIndex: o.device.index,
      threads: o.threads,
      output: o.output,
      resizeHeight: o.resize[0],
      resizeWidth: o.resize[1],
    });
    return new Decoder(raw, o);
  } catch (error) {
    throw fromNative(error);
  }
}
