import type { ImageInfoV1, VideoTrackV1 } from "../../common/schema/index.js";
import type { DeviceFrame } from "../../native/index.js";
import type { SlotHold } from "./clip-slots.js";

/** One sample of a fetched span, in decode order; `offset` is relative to the span's bytes. */
export interface Packet {
  readonly offset: number;
  readonly size: number;
  readonly pts: number;
  readonly dts: number;
  readonly keyframe: boolean;
}

export interface DecodeRequest {
  readonly track: VideoTrackV1;
  /** The fetched span: from the GOP's keyframe through the clip's last sample. */
  readonly data: Uint8Array;
  /** The samples inside `data`, decode order, keyframe first. */
  readonly packets: readonly Packet[];
  /** pts (track timescale) of the frames to return, in the clip's order; the rest are dropped. */
  readonly keep: readonly number[];
  readonly format: "rgb24" | "native";
  /** [height, width] to resize to; absent keeps the decoded size. */
  readonly size: readonly [number, number] | undefined;
  readonly device: string;
  readonly threads: number;
  /** The span starts at an H.264 recovery point, not an IDR: see the native DecodeOptions.recovering. */
  readonly recovering?: boolean;
  /** Where to write each kept frame (same order as `keep`): its place in a batch buffer; see the native DecodeOptions.into. */
  readonly into?: readonly Uint8Array[];
}

/** A decoded frame in host memory. */
export interface DecodedFrame {
  readonly data: Uint8Array;
  readonly pts: number;
  readonly width: number;
  readonly height: number;
  /** "rgb24", or the decoder's native pixel format (e.g. "yuv420p") for format "native". */
  readonly format: string;
}

export interface DecodedClip {
  /** One per `keep` entry, same order. */
  readonly frames: readonly DecodedFrame[];
  /** Where it was decoded, e.g. "cpu" or "cuda:0". */
  readonly device: string;
  /** One still image, not a clip: batches stack it as [B, H, W, C] (no time axis). */
  readonly still?: boolean;
  /** The same frames still in GPU memory (cuda decode): the labelers analyse them there. */
  readonly gpuFrames?: readonly DeviceFrame[];
  /** Frames the decoder produced for this clip, dropped ones included (default: the packets fed). */
  readonly decoded?: number;
  /** Decoded on the CPU because the CUDA device asked for (or "auto"'s) has no NVDEC for the codec. */
  readonly fallback?: { readonly codec: string; readonly reason: string };
  /** Slot groups its frames lie in, each held once for this clip: released when the clip is done with. */
  readonly holds?: readonly SlotHold[];
}

/** The decode stage: the native decoder in production, anything with this shape in tests. */
export type DecodeClip = (req: DecodeRequest) => Promise<DecodedClip>;

/** One whole image object (JPEG, PNG, WebP) to decode. */
export interface DecodeImageRequest {
  /** The object's bytes, all of them. */
  readonly data: Uint8Array;
  readonly format: ImageInfoV1["format"];
  readonly output: "rgb24" | "native";
  /** [height, width] to resize to; absent keeps the image's size. */
  readonly size: readonly [number, number] | undefined;
}

/** The image decode stage: the native loader's decodeImage in production. Returns a one-frame clip with `still: true`. */
export type DecodeImage = (req: DecodeImageRequest) => Promise<DecodedClip>;
