import fc from "fast-check";
import { describe, expect, test } from "vitest";
import {
  analyzeClip,
  framesFromTensor,
  LabelFrameError,
  lumaGrid,
  type VideoFrame,
} from "../../../sdk/labels/index.js";

describe("lumaGrid", () => {
  test("reads the luma plane of gray/yuv frames as is, honoring the row stride", () => {
    // 3×2 luma with 2 bytes of row padding, then chroma that must be ignored.
    const data = Uint8Array.from([1, 2, 3, 99, 99, 4, 5, 6, 99, 99, 200, 200]);
    const g = lumaGrid({ format: "yuv420p", width: 3, height: 2, stride: 5, data }, 1);
    expect([...g.data]).toEqual([1, 2, 3, 4, 5, 6]);
    expect(lumaGrid({ format: "gray", width: 3, height: 2, stride: 5, data }, 2).data).toEqual(Uint8Array.from([1, 3]));
  });

  test("16-bit little-endian luma is scaled to 8 bits by its alignment", () => {
    const le = (vals: number[]) => Uint8Array.from(vals.flatMap((v) => [v & 255, v >> 8]));
    expect([...lumaGrid({ format: "yuv420p10le", width: 2, height: 1, data: le([400, 1023]) }, 1).data]).toEqual([
      100, 255,
    ]);
    expect([...lumaGrid({ format: "p010le", width: 2, height: 1, data: le([400 << 6, 1023 << 6]) }, 1).data]).toEqual([
      100, 255,
    ]);
  });

  test("rgb24, interleaved and planar float agree on BT.601 luma", () => {
    const rgb = Uint8Array.from([255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255]);
    const f = Float32Array.from(rgb, (v) => v / 255);
    const planar = Float32Array.from([1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1]);
    const a = [...lumaGrid({ format: "rgb24", width: 4, height: 1, data: rgb }, 1).data];
    const b = [...lumaGrid({ format: "rgbf32", width: 4, height: 1, data: f }, 1).data];
    const c = [...lumaGrid({ format: "rgbf32p", width: 4, height: 1, data: planar }, 1).data];
    expect(a).toEqual([77, 149, 29, 255]);
    for (let i = 0; i < 4; i++) {
      expect(Math.abs(b[i]! - a[i]!)).toBeLessThanOrEqual(1);
      expect(Math.abs(c[i]! - a[i]!)).toBeLessThanOrEqual(1);
    }
  });

  test("refuses frames it cannot read, saying what it expected", () => {
    const bad = [
      { format: "gray", width: 4, height: 4, data: new Uint8Array(3) },
      { format: "gray", width: 0, height: 4, data: new Uint8Array(3) },
      { format: "p010", width: 1, height: 1, data: new Uint8Array(3) },
      { format: "rgbf32", width: 1, height: 1, data: new Uint8Array(3) },
      { format: "rgb24", width: 2, height: 1, stride: 3, data: new Uint8Array(9) },
    ] as unknown as VideoFrame[];
    for (const f of bad) expect(() => lumaGrid(f, 1)).toThrow(LabelFrameError);
    expect(() => lumaGrid(bad[0]!, 1)).toThrow(/Expected at least 16 elements .* but received 3/);
  });
});

describe("framesFromTensor", () => {
  test("views each [H, W, C] slice of a [T, H, W, C] tensor without copying", () => {
    const data = new Uint8Array(2 * 2 * 3 * 3).map((_, i) => i);
    const frames = framesFromTensor({ data, shape: [2, 2, 3, 3] });
    expect(frames).toHaveLength(2);
    expect(frames[1]!.format).toBe("rgb24");
    expect(frames[1]!.data.buffer).toBe(data.buffer);
    expect(frames[1]!.data[0]).toBe(18);
    expect(framesFromTensor({ data: new Float32Array(4), shape: [1, 2, 2, 1] })[0]!.format).toBe("grayf32");
    expect(() => framesFromTensor({ data, shape: [2, 2, 3, 4] })).toThrow(/Expected a clip tensor of shape/);
  });
});

describe("analyzeClip", () => {
  test("frame differences equal the mean absolute difference computed naively", () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ minLength: 48, maxLength: 48 }), { minLength: 2, maxLength: 5 }),
        (planes) => {
          const frames: VideoFrame[] = planes.map((data) => ({ format: "gray", width: 8, height: 6, data }));
          const a = analyzeClip(frames, { gridSamples: 0 });
          for (let i = 1; i < planes.length; i++) {
            let sum = 0;
            for (let j = 0; j < 48; j++) sum += Math.abs(planes[i]![j]! - planes[i - 1]![j]!);
            expect(a.frames[i]!.diff).toBeCloseTo(sum / 48, 9);
          }
          expect(Number.isNaN(a.frames[0]!.diff)).toBe(true);
          const mean = planes[0]!.reduce((s, v) => s + v, 0) / 48;
          expect(a.frames[0]!.mean).toBeCloseTo(mean, 9);
        },
      ),
      { numRuns: 50 },
    );
  });
});
