/**
 * Whether an H.264 sync sample can start a decode for a given frame: an IDR can; a recovery
 * point (intra refresh: the stream's only random-access points after the first frame, marked
 * sync by muxers) shows correct pictures only `recovery_frame_cnt` frames after it, and
 * libavcodec outputs none before, so frames in that window need a start further back.
 */

/** The recovery point SEI's frame count of a length-prefixed access unit; 0 for an IDR; undefined for neither. */
export function recoveryFrames(au: Uint8Array, lengthSize: number): number | undefined {
  let recovery: number | undefined;
  for (let at = 0; at + lengthSize < au.length; ) {
    let n = 0;
    for (let i = 0; i < lengthSize; i++) n = n * 256 + au[at + i]!;
    const nal = au.subarray(at + lengthSize, Math.min(au.length, at + lengthSize + n));
    const type = nal[0]! & 0x1f;
    if (type === 5) return 0;
    if (type === 6) recovery ??= seiRecoveryFrames(rbspOf(nal.subarray(1)));
    // The first slice ends the search: parameter sets and SEI come before it.
    if (type === 1) return recovery;
    at += lengthSize + n;
  }
  return recovery;
}

/** NAL payload without its emulation prevention bytes (00 00 03 → 00 00). */
function rbspOf(b: Uint8Array): Uint8Array {
  const out: number[] = [];
  for (let i = 0, zeros = 0; i < b.length; i++) {
    if (zeros >= 2 && b[i] === 3) {
      zeros = 0;
      continue;
    }
    zeros = b[i] === 0 ? zeros + 1 : 0;
    out.push(b[i]!);
  }
  return Uint8Array.from(out);
}

function seiRecoveryFrames(sei: Uint8Array): number | undefined {
  for (let at = 0; at < sei.length && sei[at] !== 0x80; ) {
    let type = 0, size = 0;
    while (sei[at] === 0xff) (type += 255), at++;
    type += sei[at++] ?? 0;
    while (sei[at] === 0xff) (size += 255), at++;
    size += sei[at++] ?? 0;
    if (type === 6) return ueAt(sei.subarray(at, at + size));
    at += size;
  }
  return undefined;
}

/** The first Exp-Golomb ue(v) of a bit string. */
function ueAt(b: Uint8Array): number | undefined {
  const bit = (i: number) => ((b[i >> 3] ?? 0) >> (7 - (i & 7))) & 1;
  let zeros = 0;
  while (zeros < 32 && bit(zeros) === 0) zeros++;
  if (zeros === 32) return undefined;
  let v = 0;
  for (let i = 0; i < zeros; i++) v = v * 2 + bit(zeros + 1 + i);
  return 2 ** zeros - 1 + v;
}
