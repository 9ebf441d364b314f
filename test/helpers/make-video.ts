/**
 * Test fixtures made by ffmpeg at test time: small videos, images and arrays written into a
 * caller's temp dir. Nothing is fetched from the network.
 */
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { encoderArgs, ffmpeg, type FixtureCodec, SINE_INPUT, testsrc2 } from "./ffmpeg-args.js";

const run = promisify(execFile);

export type { FixtureCodec };

export interface MakeVideoOptions {
  codec: FixtureCodec;
  width: number;
  height: number;
  frames: number;
  /** Frames per second; default 25. */
  fps?: number;
  /** Max consecutive B-frames (h264/hevc); default 0 so decode order equals display order. */
  bframes?: number;
  /** Keyframe interval in frames; default 12 so short clips still have several GOPs. */
  gop?: number;
  /** moov before mdat (`-movflags +faststart`); default false: moov at the end. */
  faststart?: boolean;
  /** Fragmented MP4 (`frag_keyframe+empty_moov`). */
  fragmented?: boolean;
  /** Interleave an AAC audio track. */
  audio?: boolean;
  /** Default yuv420p; yuv444p allows odd dimensions. */
  pixFmt?: string;
  /** File name inside dir; default derived from the options. */
  name?: string;
}

/**
 * Encodes a synthetic clip (testsrc2) with ffmpeg and returns its path.
 *
 * @example
 * const file = await makeVideo(dir, { codec: "h264", width: 160, height: 96, frames: 30, bframes: 2 });
 */
export async function makeVideo(dir: string, o: MakeVideoOptions): Promise<string> {
  const fps = o.fps ?? 25;
  const gop = o.gop ?? 12;
  const layout = o.fragmented ? "frag" : o.faststart ? "fast" : "tail";
  const name =
    o.name ?? `${o.codec}-${o.width}x${o.height}-${o.frames}f-b${o.bframes ?? 0}-${layout}${o.audio ? "-aac" : ""}.mp4`;
  const out = join(dir, name);
  // testsrc2 rounds odd sizes down, so scale to the exact size asked for.
  const inputs = [...testsrc2(o.width + (o.width % 2), o.height + (o.height % 2), fps)];
  if (o.audio) inputs.push(...SINE_INPUT);
  const movflags = o.fragmented
    ? ["-movflags", "frag_keyframe+empty_moov+default_base_moof"]
    : o.faststart
      ? ["-movflags", "+faststart"]
      : [];
  const audio = o.audio ? ["-c:a", "aac", "-b:a", "64k", "-shortest"] : ["-an"];
  // hvc1 rather than ffmpeg's default hev1 sample entry (an MP4 tag only).
  const tag = o.codec === "hevc" ? ["-tag:v", "hvc1"] : [];
  await ffmpeg([
    ...inputs,
    "-frames:v",
    String(o.frames),
    "-vf",
    `scale=${o.width}:${o.height}`,
    "-pix_fmt",
    o.pixFmt ?? "yuv420p",
    ...encoderArgs(o.codec, { gop, bframes: o.bframes ?? 0 }),
    ...tag,
    ...audio,
    ...movflags,
    out,
  ]);
  return out;
}

/**
 * Writes a still image (one testsrc2 frame) in the given format and returns its path.
 *
 * @example
 * const jpg = await makeImage(dir, { format: "jpeg", width: 64, height: 48 });
 */
export async function makeImage(
  dir: string,
  o: {
    format: "jpeg" | "png" | "webp";
    width: number;
    height: number;
    gray?: boolean;
    alpha?: boolean;
    lossless?: boolean;
    name?: string;
  },
): Promise<string> {
  const ext = o.format === "jpeg" ? "jpg" : o.format;
  const tag = `${o.gray ? "-gray" : ""}${o.alpha ? "-alpha" : ""}${o.lossless ? "-lossless" : ""}`;
  const out = join(dir, o.name ?? `${o.width}x${o.height}${tag}.${ext}`);
  // A half-transparent alpha: encoders drop an alpha plane that is fully opaque.
  const filter = [
    `scale=${o.width}:${o.height}`,
    ...(o.alpha ? ["format=rgba", "colorchannelmixer=aa=0.5"] : []),
    ...(o.gray ? ["format=gray"] : []),
  ];
  const pixFmt =
    o.format === "jpeg"
      ? ["-pix_fmt", "yuvj420p"]
      : o.format === "webp" && o.alpha && !o.lossless
        ? ["-pix_fmt", "yuva420p"]
        : [];
  const codec =
    o.format === "jpeg"
      ? ["-c:v", "mjpeg"]
      : o.format === "png"
        ? ["-c:v", "png"]
        : ["-c:v", "libwebp", ...(o.lossless ? ["-lossless", "1"] : [])];
  await ffmpeg([
    ...testsrc2(o.width + (o.width % 2), o.height + (o.height % 2), 1),
    "-vf",
    filter.join(","),
    "-frames:v",
    "1",
    ...pixFmt,
    ...codec,
    out,
  ]);
  return out;
}

/**
 * Writes a NumPy .npy (format 1.0) file of zeros and returns its path.
 *
 * @example
 * const npy = await makeNpy(dir, { dtype: "<f4", shape: [2, 3] });
 */
export async function makeNpy(dir: string, o: { dtype: string; shape: number[]; name?: string }): Promise<string> {
  const shape = o.shape.length === 1 ? `(${o.shape[0]},)` : `(${o.shape.join(", ")})`;
  let header = `{'descr': '${o.dtype}', 'fortran_order': False, 'shape': ${shape}, }`;
  // numpy pads the header with spaces so the data starts 64-byte aligned, ending in "\n".
  const pad = 64 - ((10 + header.length + 1) % 64);
  header = header + " ".repeat(pad % 64) + "\n";
  const head = new Uint8Array(10 + header.length);
  head.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0], 0);
  new DataView(head.buffer).setUint16(8, header.length, true);
  head.set(new TextEncoder().encode(header), 10);
  const itemSize = Number(o.dtype.slice(2)) || 1;
  const data = new Uint8Array(o.shape.reduce((a, b) => a * b, 1) * itemSize);
  const out = join(dir, o.name ?? `${o.dtype.replace(/[^a-z0-9]/gi, "")}-${o.shape.join("x")}.npy`);
  await writeFile(out, Buffer.concat([head, data]));
  return out;
}

export interface ProbePacket {
  pos: number;
  size: number;
  keyframe: boolean;
  pts: number;
  dts: number;
  /** Flag D: the demuxer drops the frame after decoding it (outside an edit list's window). */
  discard: boolean;
}

/**
 * The first (or `stream`-th) video stream's packets as `ffprobe -show_packets` lists them (decode order).
 *
 * @example
 * const packets = await probePackets(file);
 */
export async function probePackets(file: string, stream = 0): Promise<ProbePacket[]> {
  const { stdout } = await run(
    "ffprobe",
    [
      "-v",
      "error",
      "-select_streams",
      `v:${stream}`,
      "-show_packets",
      "-show_entries",
      "packet=pos,size,flags,pts,dts",
      "-of",
      "json",
      file,
    ],
    { maxBuffer: 64 << 20 },
  );
  const parsed = JSON.parse(stdout) as {
    packets?: { pos: string; size: string; flags: string; pts?: number; dts?: number }[];
  };
  return (parsed.packets ?? []).map((p) => ({
    pos: Number(p.pos),
    size: Number(p.size),
    keyframe: p.flags.includes("K"),
    discard: p.flags.includes("D"),
    pts: Number(p.pts),
    dts: Number(p.dts),
  }));
}

/**
 * A phone-style MOV: two H.264 video tracks (`width`x`height`, then a smaller second one) and an
 * AAC track, its first video track carrying a display matrix (the `rotate` tag, stream copied),
 * so its coded frames are the same for every rotation.
 *
 * @example
 * const mov = await makeRotatedMov(dir, { rotate: 90, width: 96, height: 64, frames: 30 });
 */
export async function makeRotatedMov(
  dir: string,
  o: { rotate: number; width: number; height: number; frames: number; gop?: number },
): Promise<string> {
  const coded = join(dir, `tracks-${o.width}x${o.height}-${o.frames}f.mov`);
  await ffmpeg([
    ...testsrc2(o.width, o.height),
    ...["-f", "lavfi", "-i", `smptebars=size=${o.width / 2}x${o.height / 2}:rate=25`],
    ...SINE_INPUT,
    ...["-map", "0:v", "-map", "1:v", "-map", "2:a", "-frames:v", String(o.frames)],
    ...encoderArgs("h264", { gop: o.gop ?? 12, bframes: 2 }),
    ...["-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "64k", "-shortest", coded],
  ]);
  const out = join(dir, `rotate${o.rotate}-${o.width}x${o.height}-${o.frames}f.mov`);
  await ffmpeg(["-i", coded, "-map", "0", "-c", "copy", "-metadata:s:v:0", `rotate=${o.rotate}`, out]);
  return out;
}

/**
 * The rotation ffprobe reports for the first video stream, as degrees clockwise (ffprobe's
 * side data counts counterclockwise); 0 without a display matrix.
 *
 * @example
 * await probeRotation(mov); // 90
 */
export async function probeRotation(file: string): Promise<number> {
  const { stdout } = await run("ffprobe", [
    "-v",
    "error",
    "-select_streams",
    "v:0",
    "-show_entries",
    "stream_side_data=rotation",
    "-of",
    "json",
    file,
  ]);
  const parsed = JSON.parse(stdout) as { streams?: { side_data_list?: { rotation?: number }[] }[] };
  const ccw = parsed.streams?.[0]?.side_data_list?.find((d) => d.rotation !== undefined)?.rotation ?? 0;
  return ((-ccw % 360) + 360) % 360;
}

/**
 * 60 frames of 96x64 testsrc2 encoded by x264 with `bframes` B-frames and `params` (e.g.
 * "intra-refresh=1:keyint=20", "open-gop=1:keyint=20"), for the streams whose random-access
 * points are recovery points rather than IDRs.
 *
 * @example
 * await makeX264(join(dir, "ir.mp4"), { bframes: 2, params: "intra-refresh=1:keyint=20" });
 */
export async function makeX264(file: string, o: { bframes: number; params: string; preset?: string }): Promise<string> {
  await ffmpeg([
    ...testsrc2(96, 64),
    "-frames:v",
    "60",
    ...["-c:v", "libx264", "-preset", o.preset ?? "ultrafast", "-bf", String(o.bframes), "-x264-params", o.params],
    ...["-pix_fmt", "yuv420p", file],
  ]);
  return file;
}
