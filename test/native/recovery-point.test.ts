import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { buildIndex, bytesReader } from "../../common/media-index/index.js";
import { createDecoder, packetsFromTrack, type Decoder, type HostFrame, type Packets } from "../../native/index.js";
import type { VideoTrackV1 } from "../../common/schema/index.js";
import { makeX264 } from "../helpers/make-video.js";
import { codeOf, ffmpegFrameMd5s } from "./helpers.js";

let dir: string;
let bytes: Uint8Array;
let track: VideoTrackV1;
let md5s: string[];
/** pts of each frame, in presentation order. */
let framePts: number[];
/** The second sync sample (decode order): an I-frame that is no IDR, with leading B-frames after it. */
let recoveryPoint: number;
let decoder: Decoder;

const md5 = (f: HostFrame) => createHash("md5").update(f.data).digest("hex");
const fromRecoveryPoint = (): Packets =>
  packetsFromTrack(track, bytes, 0, recoveryPoint, track.samples.size.length - recoveryPoint);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-native-recovery-"));
  const file = join(dir, "open-gop.mp4");
  await makeX264(file, { bframes: 3, params: "open-gop=1:keyint=20:min-keyint=20:scenecut=0", preset: "medium" });
  bytes = new Uint8Array(await readFile(file));
  const index = await buildIndex(bytesReader(bytes), { key: file, etag: "test" });
  track = index.video!;
  md5s = await ffmpegFrameMd5s(file);
  framePts = [...track.samples.pts].sort((a, b) => a - b);
  recoveryPoint = [...track.samples.keyframe].findIndex((k, d) => k === 1 && d > 0);
  decoder = await createDecoder({
    codec: "h264",
    extradata: track.extradata,
    width: track.width,
    height: track.height,
    threads: 1,
    output: "native",
  });
}, 60_000);
afterAll(async () => {
  await decoder?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("a decode that starts at an H.264 recovery point (open GOP, leading B-frames)", () => {
  it("fails typed without `recovering`: the leading B-frames reference frames before it", async () => {
    expect(track.samples.pts[recoveryPoint + 1]).toBeLessThan(track.samples.pts[recoveryPoint]!);
    await expect(codeOf(decoder.decode(fromRecoveryPoint()))).resolves.toBe("ERR_CORRUPT_PACKET");
  });

  it("with `recovering`, returns exactly ffmpeg's frames from the recovery point on, never a leading one", async () => {
    const frames = (await decoder.decode(fromRecoveryPoint(), { recovering: true })) as HostFrame[];
    const first = framePts.indexOf(track.samples.pts[recoveryPoint]!);
    expect(frames.map((f) => framePts.indexOf(f.pts))).toEqual(Array.from({ length: 60 - first }, (_, i) => first + i));
    expect(frames.map(md5)).toEqual(md5s.slice(first));
  });

  it("damage after the first intact picture still fails typed, also in a frame that is dropped", async () => {
    const p = fromRecoveryPoint();
    // The first P-frame after the recovery point cut to a third; only the last frame is kept, so
    // the damaged picture and every one after it up to the last come out dropped.
    const at = p.samples.findIndex((s, i) => i > 0 && s.pts > p.samples[0]!.pts);
    const samples = p.samples.map((s, i) => (i === at ? { ...s, size: Math.floor(s.size / 3) } : s));
    const dropBefore = framePts.at(-1)!;
    await expect(codeOf(decoder.decode({ data: p.data, samples }, { recovering: true, dropBefore }))).resolves.toMatch(
      /^ERR_CORRUPT_(PACKET|FRAME)$/,
    );
  });

  it("a failed run leaves no tolerance behind: the next run without `recovering` fails again", async () => {
    await expect(codeOf(decoder.decode(fromRecoveryPoint()))).resolves.toBe("ERR_CORRUPT_PACKET");
  });

  it("`recovering` needs a decoder without frame threads (they keep their own error settings)", async () => {
    const threaded = await createDecoder({
      codec: "h264",
      extradata: track.extradata,
      width: track.width,
      height: track.height,
      threads: 2,
      output: "native",
    });
    try {
      await expect(codeOf(threaded.decode(fromRecoveryPoint(), { recovering: true }))).resolves.toBe(
        "ERR_INVALID_ARGUMENT",
      );
    } finally {
      await threaded.close();
    }
  });

  it("`recovering` on a call that continues a run is an argument error", async () => {
    const p = fromRecoveryPoint();
    await decoder.decode({ data: p.data, samples: p.samples.slice(0, 8) }, { recovering: true, drain: false });
    await expect(
      codeOf(decoder.decode({ data: p.data, samples: p.samples.slice(8) }, { recovering: true })),
    ).resolves.toBe("ERR_INVALID_ARGUMENT");
    // The rejected call left the run as it was: it continues, and drains.
    const rest = (await decoder.decode({ data: p.data, samples: p.samples.slice(8) })) as HostFrame[];
    expect(rest.map(md5)).toEqual(md5s.slice(framePts.length - rest.length));
  });
});
