import { describe, expect, it } from "vitest";
import { frameToRgb } from "../../../sdk/preview/index.js";

/** A 16-bit little-endian plane of the given samples followed by `chroma` zero bytes. */
function wide(samples: number[], chroma: number): Uint8Array {
  const out = new Uint8Array(samples.length * 2 + chroma);
  samples.forEach((s, i) => new DataView(out.buffer).setUint16(i * 2, s, true));
  return out;
}

describe("frames as pictures", () => {
  it("10- and 12-bit frames show their luma brought to 8 bits (LSB- and MSB-aligned)", () => {
    const luma10 = [0, 4, 512, 1023];
    const lsb = frameToRgb({ data: wide(luma10, 4), width: 2, height: 2, format: "yuv420p10le" });
    expect(Array.from(lsb.data.filter((_, i) => i % 3 === 0))).toEqual([0, 1, 128, 255]);
    const msb = frameToRgb({
      data: wide(
        luma10.map((v) => v << 6),
        4,
      ),
      width: 2,
      height: 2,
      format: "p010le",
    });
    expect(Array.from(msb.data.filter((_, i) => i % 3 === 0))).toEqual([0, 1, 128, 255]);
    const twelve = frameToRgb({ data: wide([4095, 16], 4), width: 2, height: 1, format: "yuv420p12le" });
    expect(Array.from(twelve.data.filter((_, i) => i % 3 === 0))).toEqual([255, 1]);
  });

  it("refuses a format it cannot show, by name", () => {
    expect(() => frameToRgb({ data: new Uint8Array(16), width: 2, height: 2, format: "bayer_rggb8" })).toThrow(
      /Expected frames in rgb24 or a YUV format for a picture but received "bayer_rggb8"/,
    );
  });
});
