/**
 * `ec decode FILE`: decodes a local video through the streaming path — our index, packets
 * sliced from range reads, the native decoder — never libavformat. `--framemd5` prints
 * ffmpeg-style framemd5 lines whose md5 column equals `ffmpeg -i FILE -map 0:v:0 -f framemd5 -`.
 */
import { open as openFile, type FileHandle } from "node:fs/promises";
import { parseArgs } from "node:util";
import cliProgress from "cli-progress";
import { describeReceived, EcError } from "../../common/errors.js";
import { buildIndex, HOST_INDEX_MEMORY_BYTES, isShown, type RangeReader } from "../../common/media-index/index.js";
import type { VideoTrackV1 } from "../../common/schema/index.js";
import {
  createDecoder,
  frameBytes,
  frameMd5,
  framemd5Header,
  framemd5Line,
  packetsFromTrack,
  sampleSpan,
  type Decoder,
  type Frame,
  type HostFrame,
} from "../../native/index.js";
import { InvalidOptionError } from "../errors.js";
import { spanPackets } from "../pipeline/span-packets.js";

const USAGE = `usage: ec decode FILE [--device cpu|cuda:N] [--framemd5] [--start FRAME --frames N]
                 [--threads N] [--output native|rgb24|rgbf32-planar] [--size HxW] [--json]
                 [--frames-per-call N (default 240; bounds memory on long files)]
`;

interface DecodeArgs {
  file: string;
  device: string;
  framemd5: boolean;
  start: number;
  frames: number | undefined;
  threads: number;
  output: string;
  size: [number, number] | undefined;
  json: boolean;
  framesPerCall: number;
}

function intFlag(name: string, raw: string | undefined, min: number): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < min)
    throw new InvalidOptionError(`Expected an integer >= ${min} for --${name} but received ${describeReceived(raw)}`);
  return Number(raw);
}

export function parseDecodeArgs(argv: string[]): DecodeArgs {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      device: { type: "string", default: "cpu" },
      framemd5: { type: "boolean", default: false },
      start: { type: "string" },
      frames: { type: "string" },
      threads: { type: "string" },
      output: { type: "string", default: "native" },
      size: { type: "string" },
      json: { type: "boolean", default: false },
      "frames-per-call": { type: "string" },
    },
  });
  if (positionals.length !== 1) throw new InvalidOptionError(`Expected one FILE but received ${positionals.length}`);
  let size: [number, number] | undefined;
  if (values.size !== undefined) {
    const m = /^(\d+)x(\d+)$/.exec(values.size);
    if (!m)
      throw new InvalidOptionError(
        `Expected HxW (e.g. 224x224) for --size but received ${describeReceived(values.size)}`,
      );
    size = [Number(m[1]), Number(m[2])];
  }
  if (values.framemd5 && (values.output !== "native" || size)) {
    throw new InvalidOptionError(
      "Expected --output native without --size with --framemd5 (framemd5 is over the decoder's own pixels)",
    );
  }
  return {
    file: positionals[0]!,
    device: values.device,
    framemd5: values.framemd5,
    start: intFlag("start", values.start, 0) ?? 0,
    frames: intFlag("frames", values.frames, 1),
    threads: intFlag("threads", values.threads, 0) ?? 0,
    output: values.output,
    size,
    json: values.json,
    framesPerCall: intFlag("frames-per-call", values["frames-per-call"], 1) ?? 240,
  };
}

function fileReader(handle: FileHandle, size: number): RangeReader {
  return {
    size,
    async read(offset, length) {
      const buf = new Uint8Array(length);
      let done = 0;
      while (done < length) {
        const { bytesRead } = await handle.read(buf, done, length - done, offset + done);
        if (bytesRead === 0) break;
        done += bytesRead;
      }
      return buf.subarray(0, done);
    },
  };
}

/** One decode call: samples [first, end) in decode order, keeping frames with pts in [keepFrom, keepTo]. */
interface Call {
  first: number;
  end: number;
  keepFrom: number;
  keepTo: number;
}

/**
 * Splits frames [start, start + count) (presentation order) into decode calls that each
 * begin at a keyframe. A call after the first starts one GOP early and drops what was
 * already emitted, so open-GOP leading pictures still have their references.
 */
export function planCalls(track: VideoTrackV1, start: number, count: number, framesPerCall = 240): Call[] {
  const { pts, keyframe } = track.samples;
  const n = pts.length;
  // Frames are what the edit list shows; the samples before its start are decoded and dropped.
  const sorted = Array.from(pts)
    .filter((p) => isShown(track.edit, p))
    .sort((a, b) => a - b);
  const startPts = sorted[start]!;
  const endPts = sorted[start + count - 1]!;
  const keys: number[] = [];
  for (let i = 0; i < n; i++) if (keyframe[i] === 1) keys.push(i);
  if (keys.length === 0 || keys[0] !== 0) keys.unshift(0);
  let last = 0;
  for (let i = 0; i < n; i++) if (pts[i]! <= endPts) last = i;
  let k = 0;
  for (let i = 0; i < keys.length; i++) if (pts[keys[i]!]! <= startPts) k = i;
  const calls: Call[] = [];
  let keepFrom = startPts;
  while (keys[k] !== undefined && keys[k]! <= last) {
    let next = k + 1;
    while (keys[next] !== undefined && keys[next]! <= last && keys[next]! - keys[k]! < framesPerCall) next++;
    const end = keys[next] !== undefined && keys[next]! <= last ? keys[next]! : last + 1;
    const first = calls.length === 0 || k === 0 ? keys[k]! : keys[k - 1]!;
    calls.push({ first, end, keepFrom, keepTo: endPts });
    let maxPts = -Infinity;
    for (let i = first; i < end; i++) maxPts = Math.max(maxPts, pts[i]!);
    keepFrom = maxPts + 1;
    if (end > last) break;
    k = next;
  }
  return calls;
}

async function hostOf(frame: Frame): Promise<HostFrame> {
  return frame.kind === "host" ? frame : frame.toHost();
}

/**
 * @example
 * await main(["clip.mp4", "--framemd5"]);
 */
export async function main(argv: string[]): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(USAGE);
    return 0;
  }
  let args: DecodeArgs;
  try {
    args = parseDecodeArgs(argv);
  } catch (err) {
    process.stderr.write(`ec decode: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  let handle: FileHandle | undefined;
  let decoder: Decoder | undefined;
  try {
    handle = await openFile(args.file, "r");
    const reader = fileReader(handle, (await handle.stat()).size);
    const index = await buildIndex(reader, { key: args.file, etag: "local", memoryBytes: HOST_INDEX_MEMORY_BYTES });
    if (!index.video)
      throw new EcError(
        index.error?.code ?? "ERR_NOT_VIDEO",
        index.error?.message ?? `${args.file} has no video track`,
      );
    const track = index.video;
    const total = track.frameCount;
    const count = args.frames ?? total - args.start;
    if (args.start >= total || args.start + count > total) {
      throw new InvalidOptionError(
        `Expected --start/--frames within the ${total} frames of ${args.file} but received ${args.start}+${count}`,
      );
    }
    decoder = await createDecoder({
      codec: track.codec,
      extradata: track.extradata,
      width: track.width,
      height: track.height,
      device: args.device as "cpu",
      threads: args.threads,
      output: args.output as "native",
      ...(args.size ? { resize: args.size } : {}),
    });
    // Like ffmpeg, count in frames (tb = 1/fps) when every pts is a whole number of frames.
    const frameDuration = track.fps > 0 ? Math.round(track.timescale / track.fps) : 1;
    const inFrames = frameDuration > 1 && track.samples.pts.every((p) => p % frameDuration === 0);
    const unit = inFrames ? frameDuration : 1;
    if (args.framemd5) {
      // `ec decode --framemd5 | head` closes the pipe early; that is a normal end, not a crash.
      process.stdout.on("error", (e: NodeJS.ErrnoException) => {
        if (e.code === "EPIPE") process.exit(0);
      });
      const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
      const g = gcd(unit, track.timescale);
      const timebase: [number, number] = [unit / g, track.timescale / g];
      const header = framemd5Header({ timebase, width: track.width, height: track.height });
      process.stdout.write(header.join("\n") + "\n");
    }
    const bar =
      process.stderr.isTTY && !args.json
        ? new cliProgress.SingleBar(
            { format: "decode [{bar}] {value}/{total} frames | {fps} fps", stream: process.stderr },
            cliProgress.Presets.shades_classic,
          )
        : undefined;
    bar?.start(count, 0, { fps: "0" });
    const began = performance.now();
    let decoded = 0;
    let bytesOut = 0;
    let format = "";
    for (const call of planCalls(track, args.start, count, args.framesPerCall)) {
      const span = sampleSpan(track, call.first, call.end - call.first);
      const bytes = await reader.read(span.start, span.end - span.start);
      // MPEG-TS samples are runs of TS packets: their access units are taken out as the stream does.
      const packets = track.mpegts
        ? ((p) => ({ data: p.data, samples: p.packets }))(
            spanPackets(track, bytes, {
              firstSample: call.first,
              endSample: call.end,
              offset: span.start,
              length: span.end - span.start,
              sampleBytes: 0,
            }),
          )
        : packetsFromTrack(track, bytes, span.start, call.first, call.end - call.first);
      const frames = (await decoder.decode(packets, { dropBefore: call.keepFrom })).filter((f) => f.pts <= call.keepTo);
      for (const frame of frames) {
        format = frame.format;
        if (args.framemd5) {
          const host = await hostOf(frame);
          const size = frameBytes(host).byteLength;
          bytesOut += size;
          const pts = host.pts / unit;
          process.stdout.write(
            framemd5Line({ dts: pts, pts, duration: frameDuration / unit, size, md5: frameMd5(host) }) + "\n",
          );
        } else if (frame.kind === "host") {
          bytesOut += frame.data.byteLength;
        }
      }
      decoded += frames.length;
      bar?.update(decoded, { fps: (decoded / ((performance.now() - began) / 1000)).toFixed(1) });
    }
    bar?.stop();
    const seconds = (performance.now() - began) / 1000;
    const summary = {
      file: args.file,
      codec: track.codec,
      device: args.device,
      format,
      frames: decoded,
      seconds,
      fps: decoded / seconds,
      bytes: bytesOut,
    };
    if (args.json) process.stdout.write(JSON.stringify(summary) + "\n");
    else
      process.stderr.write(
        `decoded ${decoded} ${track.codec} frames (${format}) on ${args.device} in ${seconds.toFixed(2)} s: ${summary.fps.toFixed(1)} fps\n`,
      );
    return 0;
  } catch (err) {
    const code = err instanceof EcError ? err.code : "ERR_DECODE_FAILED";
    process.stderr.write(`ec decode: [${code}] ${(err as Error).message}\n`);
    return 1;
  } finally {
    await decoder?.close();
    await handle?.close();
  }
}
