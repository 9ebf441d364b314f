/** What the consumer learns about each clip of a batch. */
export interface ClipInfo {
  /** The object's key in the dataset. */
  readonly key: string;
  /** 0-based presentation index of the clip's first frame within its object. */
  readonly start: number;
  /** Frames in the clip. */
  readonly frames: number;
  /** Step between the clip's frames. */
  readonly stride: number;
  /** Presentation timestamps of the clip's frames, in seconds. */
  readonly pts: readonly number[];
  /** The clip's position in the global epoch order (what resume counts). */
  readonly position: number;
  /** The object's etag: labels are cached per (etag, clip), so a rewritten object is labeled afresh. */
  readonly etag?: string;
  /**
   * Degrees clockwise the video's frames turn to display upright (its display matrix): 0, 90,
   * 180 or 270. The frames are as coded unless `rotate: "auto"` turned them by this much.
   */
  readonly rotation?: 0 | 90 | 180 | 270;
  /** The source video or image as the object's index describes it (as coded: before any resize or rotation; fps and duration 0 for an image). */
  readonly source?: {
    readonly width: number;
    readonly height: number;
    readonly fps: number;
    readonly duration: number;
  };
  /** Whatever the `labels` hook returned; empty without one. */
  readonly labels: Readonly<Record<string, unknown>>;
}
