import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { open, type SdkError } from "../../../sdk/index.js";
import { expectFramesMatch, ffmpegFrameMd5s } from "../../helpers/ffmpeg-md5.js";
import { probePackets } from "../../helpers/make-video.js";

const run = promisify(execFile);
let dir: string;
const md5s = new Map<string, string[]>();

/** x264 intra refresh: one IDR, then sync samples that are recovery points (SEI), no more IDRs. */
async function intraRefresh(name: string, bframes: number): Promise<void> {
  const file = join(dir, name);
  await run("ffmpeg", [
    "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=96x64:rate=25", "-frames:v", "60",
    "-c:v", "libx264", "-preset", "ultrafast", "-bf", String(bframes), "-x264-params", "intra-refresh=1:keyint=20", "-pix_fmt", "yuv420p", file,
  ]);
  md5s.set(name, await ffmpegFrameMd5s(file));
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-intra-refresh-"));
  // Low-latency streams, where intra refresh is used, carry no B-frames (x264's zerolatency).
  await intraRefresh("ir.mp4", 0);
}, 60_000);
afterAll(async () => { await rm(dir, { recursive: true, force: true }); });

describe("H.264 intra refresh (recovery-point SEI as the only random-access points)", () => {
  it("the muxer marks recovery points as sync samples", async () => {
    expect((await probePackets(join(dir, "ir.mp4"))).filter((p) => p.keyframe).length).toBe(3);
  });

  it("every frame, as its own clip, equals ffmpeg's: a clip inside a refresh decodes from the sync sample before", async () => {
    const errors: SdkError[] = [];
    const ds = await open(dir, { device: "cpu", format: "native", frames: 1, hop: 1, align: "exact", onError: (e) => errors.push(e) });
    let frames = 0;
    for await (const b of ds) frames += expectFramesMatch(b, (key) => md5s.get(key));
    await ds.close();
    expect(errors.map((e) => e.message)).toEqual([]);
    expect(frames).toBe(60);
  });

  it("keyframe-aligned clips at the recovery points deliver ffmpeg's frames", async () => {
    const ds = await open(dir, { device: "cpu", format: "native", frames: 8, shuffle: "none", align: "keyframe" });
    const starts: string[] = [];
    for await (const b of ds) {
      expectFramesMatch(b, (key) => md5s.get(key));
      starts.push(...b.clips.map((c) => `${c.key}@${c.start}`));
    }
    await ds.close();
    expect(starts.filter((s) => s.startsWith("ir.mp4")).sort()).toEqual(["ir.mp4@0", "ir.mp4@20", "ir.mp4@40"]);
  });
});
