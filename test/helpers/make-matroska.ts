/** Matroska, WebM and MPEG-TS fixtures made by ffmpeg at test time. */
import { join } from "node:path";
import { encoderArgs, ffmpeg, SINE_INPUT, testsrc2 } from "./ffmpeg-args.js";

export interface MatroskaOptions {
  codec: "h264" | "hevc" | "vp8" | "vp9" | "av1";
  frames: number;
  width?: number;
  height?: number;
  gop?: number;
  /** `-live 1`: no Cues, a Segment of unknown size (what a live recording leaves). */
  live?: boolean;
  /** Interleave an Opus audio track. */
  audio?: boolean;
  /** Lossless H.264 of noisy frames (about their raw size each: several windows of reads per object). */
  lossless?: boolean;
  name: string;
}

/** The most consecutive B-frames of the container fixtures (VP9 and AV1 take none). */
const BFRAMES: Record<MatroskaOptions["codec"], number> = { h264: 2, hevc: 3, vp8: 0, vp9: 0, av1: 0 };

/** `frames` of testsrc2 (96x64 unless sized) at 25 fps in yuv420p, with the sine when `audio`. */
function synthetic(o: { frames: number; width?: number; height?: number; audio?: boolean }): string[] {
  return [
    ...testsrc2(o.width ?? 96, o.height ?? 64),
    ...(o.audio ? SINE_INPUT : []),
    ...["-frames:v", String(o.frames), "-pix_fmt", "yuv420p"],
  ];
}

/**
 * Encodes testsrc2 into `dir/name` (.mkv or .webm by the name) and returns its path.
 *
 * @example
 * const mkv = await makeMatroska(dir, { codec: "h264", frames: 40, name: "a.mkv" });
 */
export async function makeMatroska(dir: string, o: MatroskaOptions): Promise<string> {
  const out = join(dir, o.name);
  const gop = o.gop ?? 12;
  const codec = o.lossless
    ? ["-vf", "noise=alls=60:allf=t", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "-g", String(gop)]
    : encoderArgs(o.codec, { gop, bframes: BFRAMES[o.codec] });
  await ffmpeg([
    ...synthetic(o),
    ...codec,
    ...(o.audio ? ["-c:a", "libopus", "-shortest"] : []),
    ...(o.live ? ["-live", "1"] : []),
    out,
  ]);
  return out;
}

/**
 * Encodes testsrc2 into an MPEG transport stream `dir/name` (192-byte M2TS packets with `m2ts`),
 * with an AAC track when asked, and returns its path.
 *
 * @example
 * const ts = await makeTs(dir, { codec: "hevc", frames: 40, audio: true, name: "a.ts" });
 */
export async function makeTs(
  dir: string,
  o: {
    codec: "h264" | "hevc";
    frames: number;
    gop?: number;
    audio?: boolean;
    m2ts?: boolean;
    width?: number;
    height?: number;
    tsOffset?: number;
    name: string;
  },
): Promise<string> {
  const out = join(dir, o.name);
  await ffmpeg([
    ...synthetic(o),
    ...encoderArgs(o.codec, { gop: o.gop ?? 12, bframes: BFRAMES[o.codec] }),
    ...(o.audio ? ["-c:a", "aac", "-shortest"] : []),
    ...(o.tsOffset !== undefined ? ["-output_ts_offset", String(o.tsOffset)] : []),
    "-f",
    "mpegts",
    ...(o.m2ts ? ["-mpegts_m2ts_mode", "1"] : []),
    out,
  ]);
  return out;
}

/** An EBML element header: 8-byte size vints keep the rewrite simple (any size fits). */
function ebmlElement(id: number, content: Uint8Array): Uint8Array {
  const idBytes: number[] = [];
  for (let v = id; v > 0; v = Math.floor(v / 256)) idBytes.unshift(v & 0xff);
  const size = new Uint8Array(8);
  size[0] = 0x01;
  for (let i = 7, v = content.length; i >= 1; i--, v = Math.floor(v / 256)) size[i] = v & 0xff;
  return Uint8Array.from([...idBytes, ...size, ...content]);
}

/** Reads the EBML vint at `at`: its length and value (with the marker bit removed for sizes). */
function ebmlVint(b: Uint8Array, at: number, keepMarker: boolean): { length: number; value: number; unknown: boolean } {
  let length = 1;
  while (length <= 8 && !(b[at]! & (0x100 >> length))) length++;
  let value = keepMarker ? b[at]! : b[at]! & (0xff >> length);
  let ones = value === 0xff >> length;
  for (let i = 1; i < length; i++) (value = value * 256 + b[at + i]!), (ones &&= b[at + i] === 0xff);
  return { length, value, unknown: !keepMarker && ones };
}

/**
 * The Matroska file `bytes` (written with `live: true`: no Cues or SeekHead, whose byte positions
 * this would move) with a Projection of `roll` degrees (ProjectionPoseRoll, counter-clockwise)
 * added to its video track, as newer ffmpeg muxers write a display matrix.
 *
 * @example
 * const patched = withProjectionRoll(await readFile(mkv), -90); // shown turned 90° clockwise
 */
export function withProjectionRoll(bytes: Uint8Array, roll: number, extra: { yaw?: number } = {}): Uint8Array {
  const float = (id: number, v: number) => {
    const data = new Uint8Array(4);
    new DataView(data.buffer).setFloat32(0, v);
    return ebmlElement(id, data);
  };
  const pose = [float(0x7675, roll), ...(extra.yaw !== undefined ? [float(0x7673, extra.yaw)] : [])];
  const projection = ebmlElement(0x7670, Uint8Array.from(pose.flatMap((p) => [...p])));
  // Segment > Tracks > TrackEntry > Video gets the Projection at its end; all else is copied as it is.
  const path = [0x18538067, 0x1654ae6b, 0xae, 0xe0];
  const rebuild = (from: number, to: number, depth: number): Uint8Array => {
    const out: number[] = [];
    for (let at = from; at < to; ) {
      const id = ebmlVint(bytes, at, true);
      const size = ebmlVint(bytes, at + id.length, false);
      const start = at + id.length + size.length;
      const end = size.unknown ? to : start + size.value;
      if (id.value === path[depth]) {
        const inner = rebuild(start, end, depth + 1);
        const content = depth === path.length - 1 ? Uint8Array.from([...inner, ...projection]) : inner;
        const element = ebmlElement(id.value, content);
        // A Segment of unknown size (a live recording) stays unknown.
        if (size.unknown) element.set([0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], id.length);
        out.push(...element);
      } else {
        out.push(...bytes.subarray(at, end));
      }
      at = end;
    }
    return Uint8Array.from(out);
  };
  return rebuild(0, bytes.length, 0);
}
