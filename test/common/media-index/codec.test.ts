import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  decodeIndex,
  encodeIndex,
  guessKind,
  INDEX_FORMAT_VERSION,
  summarizeIndex,
} from "../../../common/media-index/index.js";
import type { IndexV1 } from "../../../common/schema/index.js";

function videoIndex(n: number, seed = 1): IndexV1 {
  const offset = new Float64Array(n),
    size = new Uint32Array(n),
    keyframe = new Uint8Array(n),
    pts = new Float64Array(n),
    dts = new Float64Array(n);
  let at = 48;
  for (let i = 0; i < n; i++) {
    size[i] = ((i * 7919 + seed) % 5000) + 1;
    offset[i] = at;
    at += size[i]!;
    keyframe[i] = i % 12 === 0 ? 1 : 0;
    dts[i] = i * 512 - 1024;
    pts[i] = i * 512;
  }
  return {
    version: 1,
    key: "clips/a.mp4",
    etag: '"abc"',
    size: at,
    kind: "video",
    video: {
      trackId: 1,
      codec: "h264",
      codecString: "avc1.64001f",
      extradata: new Uint8Array([1, 100, 0, 31, 255]),
      width: 1920,
      height: 1080,
      fps: 25,
      timescale: 12800,
      duration: n / 25,
      frameCount: n,
      samples: { offset, size, keyframe, pts, dts },
    },
  };
}

describe("encodeIndex/decodeIndex", () => {
  it("round-trips any sample table exactly", () => {
    const column = (n: number) =>
      fc.array(fc.double({ noNaN: true, noDefaultInfinity: true }), { minLength: n, maxLength: n });
    fc.assert(
      fc.property(
        fc
          .nat({ max: 300 })
          .chain((n) =>
            fc.tuple(
              fc.constant(n),
              column(n),
              column(n),
              column(n),
              fc.uint8Array({ minLength: n, maxLength: n }),
              fc.uint8Array({ maxLength: 64 }),
            ),
          ),
        ([n, offsets, pts, dts, flags, extradata]) => {
          const base = videoIndex(n);
          const index: IndexV1 = {
            ...base,
            video: {
              ...base.video!,
              extradata,
              samples: {
                ...base.video!.samples,
                offset: Float64Array.from(offsets),
                pts: Float64Array.from(pts),
                dts: Float64Array.from(dts),
                keyframe: Uint8Array.from(flags, (f) => f & 1),
              },
            },
          };
          const back = decodeIndex(encodeIndex(index));
          expect(back).toEqual(index);
        },
      ),
      { numRuns: 60 },
    );
  });

  it("round-trips image, array, other and error records", () => {
    const records: IndexV1[] = [
      {
        version: 1,
        key: "a.jpg",
        etag: "e",
        size: 10,
        kind: "image",
        image: { format: "jpeg", width: 3, height: 2, channels: 3 },
      },
      {
        version: 1,
        key: "a.npy",
        etag: "e",
        size: 200,
        kind: "array",
        array: { dtype: "<f4", shape: [2, 3], fortranOrder: false, dataOffset: 128 },
      },
      { version: 1, key: "a.txt", etag: "e", size: 5, kind: "other" },
      { version: 1, key: "b.mp4", etag: "e", size: 5, kind: "error", error: { code: "ERR_TRUNCATED", message: "cut" } },
    ];
    for (const r of records) expect(decodeIndex(encodeIndex(r))).toEqual(r);
  });

  it("is compact: under 30 bytes per sample", () => {
    const bytes = encodeIndex(videoIndex(100_000));
    expect(bytes.length).toBeLessThan(100_000 * 30 + 1024);
  });

  it("rejects bad magic, a past or future version, a cut body and a forged head", () => {
    const good = encodeIndex(videoIndex(50));
    const badMagic = good.slice();
    badMagic[0] = 0;
    const future = good.slice();
    new DataView(future.buffer).setUint16(4, INDEX_FORMAT_VERSION + 1, true);
    // Version 1 had no edit window: decoding it would show frames an edit list drops.
    const past = good.slice();
    new DataView(past.buffer).setUint16(4, 1, true);
    const cut = good.slice(0, good.length - 1);
    const forged = good.slice();
    // Flip a byte inside the JSON head: "kind":"video" → something zod rejects.
    const head = new TextDecoder().decode(forged.subarray(12, 12 + new DataView(forged.buffer).getUint32(8, true)));
    const at = 12 + head.indexOf('"video"') + 1;
    forged[at] = "x".charCodeAt(0);
    for (const bytes of [badMagic, future, past, cut, forged, new Uint8Array(3)]) {
      expect(() => decodeIndex(bytes)).toThrow(expect.objectContaining({ code: "ERR_INDEX_DECODE" }));
    }
  });
});

describe("guessKind", () => {
  it("maps extensions, case-insensitively, and nothing else", () => {
    expect(
      [
        "a.mp4",
        "x/B.MOV",
        "c.m4v",
        "d.jpg",
        "e.JPEG",
        "f.png",
        "g.webp",
        "h.npy",
        "i.txt",
        "noext",
        "dir.mp4/file",
        ".mp4",
      ].map(guessKind),
    ).toEqual([
      "video",
      "video",
      "video",
      "image",
      "image",
      "image",
      "image",
      "array",
      "other",
      "other",
      "other",
      "other",
    ]);
  });
});

describe("summarizeIndex", () => {
  it("counts GOPs from keyframes", () => {
    const s = summarizeIndex(videoIndex(30));
    expect(s).toMatchObject({ samples: 30, keyframes: 3, gopLengths: [12, 12, 6] });
    expect(s.gopBytes.reduce((a, b) => a + b, 0)).toBe(
      Array.from(videoIndex(30).video!.samples.size).reduce((a, b) => a + b, 0),
    );
  });
});
