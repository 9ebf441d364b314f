import type { IndexV1 } from "../schema/index.js";

export interface IndexSummary {
  key: string;
  kind: IndexV1["kind"];
  size: number;
  samples: number;
  keyframes: number;
  /** Samples per GOP (keyframe to next keyframe), in decode order. */
  gopLengths: number[];
  /** Bytes per GOP, same order as gopLengths. */
  gopBytes: number[];
}

/**
 * Counts samples, keyframes and GOP lengths of an index (what `ec inspect --index` prints).
 *
 * @example
 * const { keyframes, gopLengths } = summarizeIndex(index);
 */
export function summarizeIndex(index: IndexV1): IndexSummary {
  const s = index.video?.samples;
  const gopLengths: number[] = [];
  const gopBytes: number[] = [];
  let keyframes = 0;
  for (let i = 0; s && i < s.offset.length; i++) {
    if (s.keyframe[i] || gopLengths.length === 0) {
      if (s.keyframe[i]) keyframes++;
      gopLengths.push(0);
      gopBytes.push(0);
    }
    gopLengths[gopLengths.length - 1]!++;
    gopBytes[gopBytes.length - 1]! += s.size[i]!;
  }
  return {
    key: index.key,
    kind: index.kind,
    size: index.size,
    samples: s?.offset.length ?? 0,
    keyframes,
    gopLengths,
    gopBytes,
  };
}

/**
 * One index as plain JSON: every sample as `{ offset, size, keyframe, pts, dts }` and
 * extradata as base64 (what `ec inspect --index NAME --json` prints).
 *
 * @example
 * process.stdout.write(JSON.stringify(indexToJson(index)));
 */
export function indexToJson(index: IndexV1): unknown {
  if (!index.video) return index;
  const { samples: s, extradata, ...track } = index.video;
  const samples = Array.from(s.offset, (offset, i) => ({
    offset,
    size: s.size[i]!,
    keyframe: s.keyframe[i] === 1,
    pts: s.pts[i]!,
    dts: s.dts[i]!,
  }));
  let binary = "";
  for (const b of extradata) binary += String.fromCharCode(b);
  return { ...index, video: { ...track, extradata: btoa(binary), samples } };
}
