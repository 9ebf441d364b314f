/**
 * SDK stream benchmark, two figures from one run on this machine:
 *  1. bytes fetched per random clip over the bytes of the GOPs it needs (target ≤ 1.2), for
 *     clips drawn at random from a dataset on the local edge, read through the in-process cache;
 *  2. throughput of the same pipeline on the same clips through the local edge vs from the
 *     local files (the "local files" upper bound), as a ratio.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/stream-bytes.js [--videos 4] [--frames 240]
 *       [--size 640x360] [--gop 30] [--clip 8] [--clips 48] [--json]
 */
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { startLocalEdge } from "../sdk/dev/index.js";
import { bracketedRows, makeBenchVideos, parseStreamBenchArgs, randomClips } from "./stream-common.js";
import { clipFrames, decodeSpan, frameOrder } from "../sdk/sampler/index.js";
import { LocalDirSource } from "../sdk/source/index.js";

const { values, width, height } = parseStreamBenchArgs();
const sizes = { videos: Number(values.videos), frames: Number(values.frames), gop: Number(values.gop) };

/**
 * Bytes of the GOP spans the clips need, each byte counted once (clips that share a GOP need it
 * once; the cache fetches it once), from the same index the edge serves.
 */
async function uniqueGopBytes(files: string, ids: readonly string[], frames: number): Promise<number> {
  const source = new LocalDirSource(files);
  const { objects } = await source.list();
  const spans = new Map<string, [number, number][]>();
  for (const id of ids) {
    const [key, start] = id.split("@") as [string, string];
    const object = objects.find((o) => o.key === key)!;
    const track = (await source.index(object)).video!;
    const span = decodeSpan(track.samples, frameOrder(track.samples), clipFrames(Number(start), { frames, stride: 1 }));
    spans.set(key, [...(spans.get(key) ?? []), [span.offset, span.offset + span.length]]);
  }
  let total = 0;
  for (const list of spans.values()) {
    list.sort((a, b) => a[0] - b[0]);
    let [lo, hi] = list[0]!;
    for (const [a, b] of list.slice(1)) {
      if (a > hi) {
        total += hi - lo;
        [lo, hi] = [a, b];
      } else hi = Math.max(hi, b);
    }
    total += hi - lo;
  }
  return total;
}

const dir = await mkdtemp(join(tmpdir(), "ec-bench-stream-"));
const edge = await startLocalEdge({ port: 0, quiet: true, varsDir: dir, persistDir: join(dir, "r2") });
try {
  const files = join(dir, "videos");
  await mkdir(files);
  await makeBenchVideos(files, { ...sizes, width, height }, async (name, file) => {
    const res = await request(`${edge.url}/v1/objects/bench/${name}`, {
      method: "PUT",
      body: await readFile(file),
      headers: { authorization: `Bearer ${edge.token}` },
    });
    await res.body.dump();
    if (res.statusCode !== 201) throw new Error(`PUT answered ${res.statusCode}`);
  });
  const { remote, sameClips, localFps, remoteFps } = await bracketedRows(
    files,
    `${edge.url}/v1/datasets/bench`,
    randomClips(values),
    { token: edge.token },
  );
  const gop = await uniqueGopBytes(files, remote.ids, Number(values.clip));
  const result = {
    clips: remote.stats.clips,
    same_clips: sameClips,
    gop_bytes_per_clip: Math.round(gop / remote.stats.clips),
    bytes_fetched_per_clip: Math.round(remote.stats.bytes_fetched / remote.stats.clips),
    fetched_over_gop_bytes: Number((remote.stats.bytes_fetched / gop).toFixed(3)),
    local_fps: Number(localFps.toFixed(1)),
    edge_fps: Number(remoteFps.toFixed(1)),
    edge_over_local: Number((remoteFps / localFps).toFixed(3)),
    cache_hit_ratio: Number(remote.stats.cache_hit_ratio.toFixed(3)),
  };
  if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else {
    process.stdout.write(
      [
        `${result.clips} random ${values.clip}-frame clips of ${values.videos} × ${values.size} h264 (GOP ${values.gop}, 2 B-frames); same clips both sides: ${sameClips}`,
        `bytes per clip: GOP bytes needed ${result.gop_bytes_per_clip}, fetched ${result.bytes_fetched_per_clip} → ${result.fetched_over_gop_bytes}× (target ≤ 1.2)`,
        `throughput: local files ${result.local_fps} frames/s, local edge ${result.edge_fps} frames/s → ${result.edge_over_local}×`,
      ].join("\n") + "\n",
    );
  }
} finally {
  await edge.stop();
  await rm(dir, { recursive: true, force: true });
}
