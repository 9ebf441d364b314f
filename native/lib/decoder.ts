import type { RawDecoder } from "./binding-types.js";
import { NativeError, NativeErrorCode, argumentError, fromNative } from "./errors.js";
import { deviceFrames, hostFrames, type Frame } from "./frames.js";
import { loadBinding } from "./load.js";
import { validateDecoderOptions, type DecoderOptions, type ValidatedDecoderOptions } from "./options.js";
import { packPackets, type Packets } from "./packets.js";

export interface DecodeOptions {
  /** Frames with pts below this are decoded (others depend on them) but not returned. */
  readonly dropBefore?: number;
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
  decode(packets: Packets, options: DecodeOptions = {}): Promise<Frame[]> {
    let packed: ReturnType<typeof packPackets>;
    const dropBefore = options.dropBefore;
    try {
      packed = packPackets(packets);
      if (dropBefore !== undefined && !Number.isSafeInteger(dropBefore)) throw argumentError("an integer pts", "dropBefore", dropBefore);
    } catch (error) {
      // Always a promise: callers handle bad packets and bad bytes in one place.
      return Promise.reject(error);
    }
    const run = async (): Promise<Frame[]> => {
      const raw = this.#raw;
      if (!raw) throw new NativeError(NativeErrorCode.DecoderClosed, "The decoder is closed");
      try {
        const out = await raw.decode(packed.data, packed.table, packed.keyframes, dropBefore ?? null);
        return "device" in out ? deviceFrames(out.device) : hostFrames(out);
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
