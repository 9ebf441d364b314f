import { z } from "zod";

/** What the consumer learns about each clip of a batch (the engine sends it to the Python client as is). */
export const ClipInfoSchema = z
  .object({
    /** The object's key in the dataset. */
    key: z.string(),
    /** 0-based presentation index of the clip's first frame within its object. */
    start: z.number().int().nonnegative(),
    /** Frames in the clip. */
    frames: z.number().int().positive(),
    /** Step between the clip's frames. */
    stride: z.number().int().positive(),
    /** Presentation timestamps of the clip's frames, in seconds. */
    pts: z.array(z.number()).readonly(),
    /** The clip's position in the global epoch order (what resume counts). */
    position: z.number().int().nonnegative(),
    /** The object's etag: labels are cached per (etag, clip), so a rewritten object is labeled afresh. */
    etag: z.string().optional(),
    /**
     * Degrees clockwise the video's frames turn to display upright (its display matrix): 0, 90,
     * 180 or 270. The frames are as coded unless `rotate: "auto"` turned them by this much.
     */
    rotation: z.union([z.literal(0), z.literal(90), z.literal(180), z.literal(270)]).optional(),
    /** The source video or image as the object's index describes it (as coded: before any resize or rotation; fps and duration 0 for an image). */
    source: z
      .object({ width: z.number().int(), height: z.number().int(), fps: z.number(), duration: z.number() })
      .readonly()
      .optional(),
    /** Whatever the `labels` hook returned; empty without one. */
    labels: z.record(z.string(), z.unknown()).readonly(),
  })
  .readonly();

/** What the consumer learns about each clip of a batch. */
export type ClipInfo = z.output<typeof ClipInfoSchema>;
