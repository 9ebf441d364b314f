import type { VideoTrackV1 } from "../schema/index.js";

/**
 * Whether a sample of pts `pts` is shown under a track's edit window (VideoTrackV1.edit):
 * ffmpeg decodes the others as references and outputs only these.
 *
 * @example
 * const frames = Array.from(track.samples.pts).filter((p) => isShown(track.edit, p)).length;
 */
export function isShown(edit: VideoTrackV1["edit"], pts: number): boolean {
  return !edit || (pts >= edit.start && (edit.end === undefined || pts < edit.end));
}
