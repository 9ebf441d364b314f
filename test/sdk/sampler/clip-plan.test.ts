import { SetDigest } from "../../../common/dataset-table/set-digest.js";
import { describe, expect, it } from "vitest";
import { clipFrames, clipStarts, makePlan } from "../../../sdk/sampler/clip-plan.js";
import { decodeSpan, frameOrder, NOT_SHOWN } from "../../../sdk/sampler/frame-order.js";
import type { SampleTableV1 } from "../../../common/schema/index.js";

describe("clipStarts", () => {
  const keyframes = [0, 12, 24, 36];
  it("starts on keyframes at least a span apart and only where the clip fits", () => {
    expect(clipStarts(40, keyframes, { frames: 8, stride: 1, align: "keyframe" })).toEqual([0, 12, 24]);
    expect(clipStarts(40, keyframes, { frames: 8, stride: 2, align: "keyframe" })).toEqual([0, 24]);
    expect(clipStarts(40, keyframes, { frames: 4, stride: 1, align: "keyframe" })).toEqual([0, 12, 24, 36]);
    expect(clipStarts(40, keyframes, { frames: 4, stride: 1, hop: 20, align: "keyframe" })).toEqual([0, 24]);
  });
  it("exact starts tile the object every hop frames", () => {
    expect(clipStarts(20, keyframes, { frames: 4, stride: 1, align: "exact" })).toEqual([0, 4, 8, 12, 16]);
    expect(clipStarts(20, keyframes, { frames: 4, stride: 2, hop: 5, align: "exact" })).toEqual([0, 5, 10]);
    expect(clipStarts(3, keyframes, { frames: 4, stride: 1, align: "exact" })).toEqual([]);
  });
  it("lists a clip's frames by stride", () => {
    expect(clipFrames(10, { frames: 3, stride: 4 })).toEqual([10, 14, 18]);
  });
});

// I P B B P B B … in decode order with pts reordered, like an x264 stream with 2 B-frames.
function bframeTable(): SampleTableV1 {
  const pts = [0, 3, 1, 2, 6, 4, 5, 7, 10, 8, 9, 11];
  const n = pts.length;
  return {
    offset: Float64Array.from({ length: n }, (_, i) => 100 + i * 10),
    size: Uint32Array.from({ length: n }, () => 10),
    keyframe: Uint8Array.from(pts.map((_, i) => (i === 0 || i === 7 ? 1 : 0))),
    pts: Float64Array.from(pts),
    dts: Float64Array.from({ length: n }, (_, i) => i - 2),
  };
}

describe("frameOrder and decodeSpan", () => {
  it("maps presentation to decode order", () => {
    const order = frameOrder(bframeTable());
    expect([...order.decodeOf]).toEqual([0, 2, 3, 1, 5, 6, 4, 7, 9, 10, 8, 11]);
    expect(order.keyframes).toEqual([0, 7]);
  });
  it("with an edit window, frames are the shown samples only; a mid-GOP frame 0 is a start", () => {
    const t = bframeTable();
    // A cut at pts 2: samples of pts 0 and 1 are decoded but not shown, nor is pts 11 past the end.
    const order = frameOrder(t, { start: 2, end: 11 });
    expect([...order.decodeOf]).toEqual([3, 1, 5, 6, 4, 7, 9, 10, 8]);
    expect(order.frameOf[0]).toBe(NOT_SHOWN);
    expect(order.frameOf[3]).toBe(0);
    expect(order.keyframes).toEqual([0, 5]);
    // Frame 0 (pts 2, sample 3) is decoded from the keyframe before the edit.
    expect(decodeSpan(t, order, [0, 1])).toMatchObject({ firstSample: 0, endSample: 4 });
  });
  it("an open GOP's leading pictures (after its keyframe in decode order, shown before it) decode from the keyframe before", () => {
    // I P B B | CRA B B P B B: the B-frames after the CRA show before it and reference the first GOP.
    const pts = [0, 3, 1, 2, 6, 4, 5, 9, 7, 8];
    const t: SampleTableV1 = {
      offset: Float64Array.from(pts, (_, i) => i * 10),
      size: Uint32Array.from(pts, () => 10),
      keyframe: Uint8Array.from(pts, (_, i) => (i === 0 || i === 4 ? 1 : 0)),
      pts: Float64Array.from(pts),
      dts: Float64Array.from(pts, (_, i) => i - 2),
    };
    const order = frameOrder(t);
    expect(decodeSpan(t, order, [4, 5])).toMatchObject({ firstSample: 0, endSample: 7 });
    // From the CRA on, nothing leads it: the CRA starts the run.
    expect(decodeSpan(t, order, [6, 7])).toMatchObject({ firstSample: 4, endSample: 9 });
  });
  it("spans from the GOP's keyframe through the last needed sample in decode order", () => {
    const t = bframeTable();
    const order = frameOrder(t);
    // Frames 4..5 are samples 5 and 6; the keyframe before them is sample 0.
    expect(decodeSpan(t, order, [4, 5])).toEqual({
      firstSample: 0,
      endSample: 7,
      offset: 100,
      length: 70,
      sampleBytes: 70,
    });
    // Frame 3 is shown by sample 1 (the P); frames 7..8 by 7 and 9.
    expect(decodeSpan(t, order, [7, 8])).toMatchObject({ firstSample: 7, endSample: 10, offset: 170, length: 30 });
  });
});

describe("makePlan", () => {
  it("changes fingerprint when an etag or the sampling changes", () => {
    const objs = [{ key: "a", etag: "1", starts: [0, 8] }];
    const shards = [{ objects: [0] }];
    const a = makePlan(objs, shards, { frames: 8, stride: 1, align: "keyframe" });
    expect(a.total).toBe(2);
    expect(makePlan(objs, shards, { frames: 8, stride: 1, align: "keyframe" }).fingerprint).toBe(a.fingerprint);
    expect(
      makePlan([{ ...objs[0]!, etag: "2" }], shards, { frames: 8, stride: 1, align: "keyframe" }).fingerprint,
    ).not.toBe(a.fingerprint);
    // Another video track is another dataset; track 0 is the plan of checkpoints from before the option.
    expect(makePlan(objs, shards, { frames: 8, stride: 1, align: "keyframe", track: 1 }).fingerprint).not.toBe(
      a.fingerprint,
    );
    expect(makePlan(objs, shards, { frames: 8, stride: 1, align: "keyframe", track: 0 }).fingerprint).toBe(
      a.fingerprint,
    );
    expect(makePlan(objs, shards, { frames: 4, stride: 2, align: "keyframe" }).fingerprint).not.toBe(a.fingerprint);
  });

  it("fingerprints the listing's digest and shard sizes, so a table head's digest gives the same one", () => {
    const objs = ["a", "b", "c"].map((key, i) => ({ key, etag: `"${i}"`, starts: [0] }));
    const o = { frames: 8, stride: 1, align: "keyframe" } as const;
    const shards = [{ objects: [0, 1] }, { objects: [2] }];
    const a = makePlan(objs, shards, o);
    // As a head's page summaries add up: any split of the listing, in any order.
    const head = new SetDigest().addDigest(new SetDigest().add("c", '"2"').add("a", '"0"').toString(), 2);
    expect(makePlan(objs, shards, o, head.add("b", '"1"').toString()).fingerprint).toBe(a.fingerprint);
    // The digest given is what is fingerprinted: another listing's is another plan.
    expect(makePlan(objs, shards, o, "0".repeat(32)).fingerprint).not.toBe(a.fingerprint);
    expect(makePlan(objs, [{ objects: [0] }, { objects: [1, 2] }], o).fingerprint).not.toBe(a.fingerprint);
    expect(makePlan(objs.slice(0, 2), [{ objects: [0, 1] }], o).fingerprint).not.toBe(a.fingerprint);
  });
});
