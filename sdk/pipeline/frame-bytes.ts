/**
 * Bytes of one decoded frame of a track at the output size, so a clip can take its place in a
 * batch buffer before it is decoded. rgb24's are known from the track; a native pixel format's
 * are learned from the first clip of that codec and size the stream decoded (a format of another
 * size later just misses its slot: the decoder writes where it would). One per stream: what one
 * stream learned says nothing of another's videos or options.
 */
import type { VideoTrackV1 } from "../../common/schema/index.js";
import type { ResolvedOptions } from "../options.js";

type FrameOptions = Pick<ResolvedOptions, "format" | "size">;

export class FrameBytes {
  private readonly native = new Map<string, number>();

  /**
   * The bytes of one frame of `track` as `o` asks for it; undefined while not known yet.
   *
   * @example
   * const bytes = frameBytes.of(track, { format: "rgb24", size: [224, 224] }); // 150528
   */
  of(track: VideoTrackV1, o: FrameOptions): number | undefined {
    if (o.format !== "rgb24") return this.native.get(keyOf(track, o));
    const [h, w] = o.size ?? [track.height, track.width];
    return h * w * 3;
  }

  /** A native frame of `track` decoded to `bytes`: later clips of its codec and size take slots of that size. */
  learn(track: VideoTrackV1, o: FrameOptions, bytes: number): void {
    if (o.format !== "rgb24") this.native.set(keyOf(track, o), bytes);
  }
}

const keyOf = (track: VideoTrackV1, o: FrameOptions) =>
  `${track.codec}:${track.width}x${track.height}:${o.size?.join("x") ?? ""}`;
