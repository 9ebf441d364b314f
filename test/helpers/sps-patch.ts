/**
 * Rewrites the picture size an H.264 avcC's SPS declares, so a tiny encode claims a huge frame:
 * the decoder's own view of the stream, not the index's, is what changes.
 */

/** RBSP from a NAL unit's payload: emulation prevention bytes (00 00 03) taken out. */
function toRbsp(nal: Uint8Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < nal.length; i++) {
    if (i >= 2 && nal[i] === 3 && nal[i - 1] === 0 && nal[i - 2] === 0 && out.at(-1) === 0 && out.at(-2) === 0)
      continue;
    out.push(nal[i]!);
  }
  return out;
}

function toNal(rbsp: number[]): number[] {
  const out: number[] = [];
  for (const b of rbsp) {
    if (b <= 3 && out.length >= 2 && out.at(-1) === 0 && out.at(-2) === 0) out.push(3);
    out.push(b);
  }
  return out;
}

class Bits {
  pos = 0;
  constructor(private readonly bytes: number[]) {}
  bit(): number {
    const b = (this.bytes[this.pos >> 3]! >> (7 - (this.pos & 7))) & 1;
    this.pos++;
    return b;
  }
  u(n: number): number {
    let v = 0;
    for (let i = 0; i < n; i++) v = v * 2 + this.bit();
    return v;
  }
  ue(): number {
    let zeros = 0;
    while (this.bit() === 0) zeros++;
    return 2 ** zeros - 1 + this.u(zeros);
  }
  get length(): number {
    return this.bytes.length * 8;
  }
}

class Writer {
  readonly bits: number[] = [];
  u(n: number, v: number): void {
    for (let i = n - 1; i >= 0; i--) this.bits.push(Math.floor(v / 2 ** i) & 1);
  }
  ue(v: number): void {
    const n = Math.floor(Math.log2(v + 1));
    this.u(n, 0);
    this.u(n + 1, v + 1);
  }
  bytes(): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.bits.length; i += 8) {
      let b = 0;
      for (let k = 0; k < 8; k++) b = b * 2 + (this.bits[i + k] ?? 0);
      out.push(b);
    }
    return out;
  }
}

/**
 * The SPS NAL unit (header byte included) with its size set to `width` x `height` (multiples of
 * 16, frame_mbs_only). Only Baseline/Main SPSs (profile_idc without chroma_format_idc) with
 * pic_order_cnt_type 0 or 2 are handled: what `libx264 -profile:v baseline` writes.
 */
export function resizeSps(sps: Uint8Array, width: number, height: number): Uint8Array {
  const rbsp = toRbsp(sps);
  const r = new Bits(rbsp);
  const w = new Writer();
  w.u(8, r.u(8)); // NAL header
  const profile = r.u(8);
  if (![66, 77, 88].includes(profile)) throw new Error(`resizeSps handles Baseline/Main, not profile ${profile}`);
  w.u(8, profile);
  w.u(16, r.u(16)); // constraint flags, level
  w.ue(r.ue()); // seq_parameter_set_id
  w.ue(r.ue()); // log2_max_frame_num_minus4
  const pocType = r.ue();
  w.ue(pocType);
  if (pocType === 0) w.ue(r.ue());
  else if (pocType !== 2) throw new Error(`resizeSps handles pic_order_cnt_type 0 or 2, not ${pocType}`);
  w.ue(r.ue()); // max_num_ref_frames
  w.u(1, r.u(1)); // gaps_in_frame_num_value_allowed_flag
  r.ue();
  r.ue();
  w.ue(width / 16 - 1);
  w.ue(height / 16 - 1);
  while (r.pos < r.length) w.u(1, r.bit()); // the rest, trailing bits included
  const out = w.bytes();
  while (out.at(-1) === 0) out.pop();
  return Uint8Array.from(toNal(out));
}

/** The avcC record with its (first) SPS replaced by `resizeSps` of it. */
export function resizeAvcC(avcC: Uint8Array, width: number, height: number): Uint8Array<ArrayBuffer> {
  const spsLength = (avcC[6]! << 8) | avcC[7]!;
  const sps = resizeSps(avcC.subarray(8, 8 + spsLength), width, height);
  const out = new Uint8Array(avcC.length - spsLength + sps.length);
  out.set(avcC.subarray(0, 6), 0);
  out.set([sps.length >> 8, sps.length & 0xff], 6);
  out.set(sps, 8);
  out.set(avcC.subarray(8 + spsLength), 8 + sps.length);
  return out;
}
