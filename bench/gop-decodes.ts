/**
 * Where an exact epoch's decodes go: every sample a GOP run's decoder takes in is one decoded
 * frame, so counting the samples fed per object and sample (through a wrapped `openRun`) tells
 * the samples decoded once, those decoded again (by frame position in their GOP: a GOP's first
 * frames decoded again are a boundary a clip straddles), and what the drains of retired runs
 * produced. Videos get distinct widths so that no decoder serves runs of two videos.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/gop-decodes.js [--videos 4] [--frames 900] [--gop 30] [--clip 16]
 */
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { VideoTrackV1 } from "../common/schema/index.js";
import { open } from "../sdk/index.js";
import type { OpenRunDecoder } from "../sdk/pipeline/gop-decode.js";
import { nativeDecoders } from "../sdk/pipeline/native-decode.js";
import { makeVideo } from "../test/helpers/make-video.js";

const { values } = parseArgs({
  options: {
    videos: { type: "string", default: "4" },
    frames: { type: "string", default: "900" },
    gop: { type: "string", default: "30" },
    clip: { type: "string", default: "16" },
  },
});
const gop = Number(values.gop);
const root = await mkdtemp(join(tmpdir(), "ec-bench-gop-decodes-"));
try {
  const dir = join(root, "videos");
  await mkdir(dir);
  for (let i = 0; i < Number(values.videos); i++) {
    const o = { codec: "h264" as const, width: 640 + 16 * i, height: 360, frames: Number(values.frames), gop };
    await makeVideo(dir, { ...o, bframes: 2, name: `v${i}.mp4` });
  }
  // Samples fed, by track (its width tells the video) and pts; frames of each track by pts.
  const fed = new Map<VideoTrackV1, Map<number, number>>();
  let drained = 0;
  const natives = nativeDecoders();
  const openRun: OpenRunDecoder = async (config) => {
    const d = await natives.openRun(config);
    const counts = fed.get(config.track) ?? new Map<number, number>();
    fed.set(config.track, counts);
    return {
      device: d.device,
      release: (ok) => d.release(ok),
      async feed(data, packets, o) {
        const out = await d.feed(data, packets, o);
        if (packets.length === 0) drained += out.decoded;
        for (const p of packets.slice(0, out.fed)) counts.set(p.pts, (counts.get(p.pts) ?? 0) + 1);
        return out;
      },
    };
  };
  const ds = await open(dir, { device: "cpu", batch: 8, frames: Number(values.clip), align: "exact" }, { openRun });
  for await (const b of ds) b.release();
  await ds.close();
  await natives.close();
  const s = ds.stats();
  let samplesFed = 0;
  let again = 0;
  const againAt = new Array<number>(gop).fill(0);
  for (const [track, counts] of fed) {
    const byPts = [...track.samples.pts].sort((a, b) => a - b);
    for (const [pts, n] of counts) {
      samplesFed += n;
      if (n > 1) {
        again += n - 1;
        againAt[byPts.indexOf(pts) % gop]! += n - 1;
      }
    }
  }
  const result = {
    gop,
    frames_delivered: s.frames,
    decoded_frames: s.decoded_frames,
    decoded_per_frame: s.decoded_frames / s.frames,
    samples_fed: samplesFed,
    samples_fed_again: again,
    of_them_in_a_gops_first_16_frames: againAt.slice(0, 16).reduce((a, b) => a + b, 0),
    frames_out_of_retired_runs_drains: drained,
    fed_again_by_frame_in_gop: againAt.join(" "),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  await rm(root, { recursive: true, force: true });
}
