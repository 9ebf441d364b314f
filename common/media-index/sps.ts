/**
 * Picture dimensions from an H.264 or HEVC sequence parameter set: what a stream without a
 * container header (MPEG-TS) says of its size. Only the fields before the size are walked.
 */
import type { VideoCodec } from "../schema/index.js";
import { IndexErrorCode, MediaIndexError } from "./errors.js";

class Bits {
  private at = 0;
  constructor(private readonly b: Uint8Array) {}
  u(n: number): number {
    let v = 0;
    for (let i = 0; i < n; i++, this.at++) {
      if (this.at >= this.b.length * 8)
        throw new MediaIndexError(IndexErrorCode.CORRUPT, "sequence parameter set ends early");
      v = v * 2 + ((this.b[this.at >> 3]! >> (7 - (this.at & 7))) & 1);
    }
    return v;
  }
  ue(): number {
    let zeros = 0;
    while (this.u(1) === 0)
      if (++zeros > 31)
        throw new MediaIndexError(IndexErrorCode.CORRUPT, "sequence parameter set has a runaway Exp-Golomb code");
    return 2 ** zeros - 1 + this.u(zeros);
  }
  se(): number {
    const k = this.ue();
    return k & 1 ? (k + 1) / 2 : -k / 2;
  }
}

/** RBSP bytes of a NAL unit (header removed, emulation prevention 00 00 03 undone). */
function rbsp(nal: Uint8Array, header: number): Uint8Array {
  const out: number[] = [];
  for (let i = header, zeros = 0; i < nal.length; i++) {
    if (zeros >= 2 && nal[i] === 3) {
      zeros = 0;
      continue;
    }
    zeros = nal[i] === 0 ? zeros + 1 : 0;
    out.push(nal[i]!);
  }
  return Uint8Array.from(out);
}

function h264(nal: Uint8Array): { width: number; height: number } {
  const r = new Bits(rbsp(nal, 1));
  const profile = r.u(8);
  r.u(16); // constraint flags, level
  r.ue(); // sps id
  let chroma = 1;
  if ([100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135].includes(profile)) {
    chroma = r.ue();
    if (chroma === 3) r.u(1);
    r.ue();
    r.ue();
    r.u(1); // bit depths, transform bypass
    if (r.u(1)) {
      for (let i = 0; i < (chroma === 3 ? 12 : 8); i++) {
        if (!r.u(1)) continue;
        let last = 8,
          next = 8;
        for (let j = 0; j < (i < 6 ? 16 : 64) && next !== 0; j++) {
          next = (last + r.se() + 256) % 256;
          last = next === 0 ? last : next;
        }
      }
    }
  }
  r.ue(); // log2_max_frame_num
  const poc = r.ue();
  if (poc === 0) r.ue();
  else if (poc === 1) {
    r.u(1);
    r.se();
    r.se();
    for (let i = r.ue(); i > 0; i--) r.se();
  }
  r.ue();
  r.u(1); // max refs, gaps allowed
  const mbWidth = r.ue() + 1,
    mapHeight = r.ue() + 1;
  const frameMbsOnly = r.u(1);
  if (!frameMbsOnly) r.u(1);
  r.u(1);
  let [left, right, top, bottom] = [0, 0, 0, 0];
  if (r.u(1)) [left, right, top, bottom] = [r.ue(), r.ue(), r.ue(), r.ue()];
  const cropX = chroma === 0 || chroma === 3 ? 1 : 2;
  const cropY = (chroma === 1 ? 2 : 1) * (2 - frameMbsOnly);
  return {
    width: mbWidth * 16 - cropX * (left + right),
    height: (2 - frameMbsOnly) * mapHeight * 16 - cropY * (top + bottom),
  };
}

function hevc(nal: Uint8Array): { width: number; height: number } {
  const r = new Bits(rbsp(nal, 2));
  r.u(4);
  const subLayers = r.u(3);
  r.u(1);
  r.u(88);
  r.u(8); // general profile, tier, level
  const present: [number, number][] = [];
  for (let i = 0; i < subLayers; i++) present.push([r.u(1), r.u(1)]);
  if (subLayers > 0) for (let i = subLayers; i < 8; i++) r.u(2);
  for (const [profile, level] of present) {
    if (profile) r.u(88);
    if (level) r.u(8);
  }
  r.ue(); // sps id
  const chroma = r.ue();
  if (chroma === 3) r.u(1);
  let width = r.ue(),
    height = r.ue();
  if (r.u(1)) {
    const [sx, sy] = chroma === 1 ? [2, 2] : chroma === 2 ? [2, 1] : [1, 1];
    const [left, right, top, bottom] = [r.ue(), r.ue(), r.ue(), r.ue()];
    width -= sx * (left + right);
    height -= sy * (top + bottom);
  }
  return { width, height };
}

/**
 * The coded picture size of an Annex B access unit's (or extradata's) first SPS, or undefined without one.
 *
 * @example
 * spsDimensions(extradata, "h264"); // { width: 1920, height: 1080 }
 */
export function spsDimensions(annexB: Uint8Array, codec: VideoCodec): { width: number; height: number } | undefined {
  for (let i = 0; i + 3 < annexB.length; i++) {
    if (annexB[i] !== 0 || annexB[i + 1] !== 0 || annexB[i + 2] !== 1) continue;
    const h = annexB[i + 3]!;
    const isSps = codec === "h264" ? (h & 0x1f) === 7 : ((h >> 1) & 0x3f) === 33;
    if (!isSps) continue;
    let end = i + 3;
    while (
      end + 2 < annexB.length &&
      !(annexB[end] === 0 && annexB[end + 1] === 0 && (annexB[end + 2] === 1 || annexB[end + 2] === 0))
    )
      end++;
    const nal = annexB.subarray(i + 3, end + 2 < annexB.length ? end : annexB.length);
    return codec === "h264" ? h264(nal) : hevc(nal);
  }
  return undefined;
}
