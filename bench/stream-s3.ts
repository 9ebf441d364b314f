/**
 * Direct-to-bucket benchmark, three figures from one run on this machine against a loopback
 * S3-compatible server (s3rver) holding generated videos:
 *  1. header bytes read to index an object over its size (client-side indexing, range GETs only);
 *  2. indexing time with the on-disk index cache warm over cold (a second run over the bucket);
 *  3. throughput of the same random clips streamed from s3:// vs from the local files.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/stream-s3.js [--videos 4] [--frames 240]
 *       [--size 640x360] [--gop 30] [--clip 8] [--clips 48] [--json]
 */
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { OpenOptions } from "../sdk/index.js";
import { bracketedRows, makeBenchVideos, parseStreamBenchArgs, randomClips } from "./stream-common.js";
import { openS3Source } from "../sdk/source/s3/index.js";
import { startS3Server } from "../test/helpers/s3-server.js";

const { values, width, height } = parseStreamBenchArgs();
const sizes = { videos: Number(values.videos), frames: Number(values.frames), gop: Number(values.gop) };

/** Indexes every object of the dataset once; returns seconds, header bytes and range GETs. */
async function indexAll(url: URL, s3: Awaited<ReturnType<typeof startS3Server>>, indexCacheDir: string) {
  const source = await openS3Source(
    url,
    { endpoint: s3.endpoint, region: s3.region, credentials: s3.credentials, indexCacheDir },
    {},
  );
  try {
    // The bare listing: list() would build every index itself (the local table).
    const objects = await source.objects();
    const t0 = performance.now();
    for (const o of objects) await source.index(o);
    const seconds = (performance.now() - t0) / 1000;
    return { seconds, objects: objects.length, bytes: objects.reduce((n, o) => n + o.size, 0), ...source.counters() };
  } finally {
    await source.close();
  }
}

const dir = await mkdtemp(join(tmpdir(), "ec-bench-s3-"));
const s3 = await startS3Server();
try {
  const files = join(dir, "videos");
  await mkdir(files);
  await makeBenchVideos(files, { ...sizes, width, height }, async (name, file) => {
    await s3.put(`bench/${name}`, await readFile(file));
  });
  const url = new URL(`s3://${s3.bucket}/bench`);
  const indexCacheDir = join(dir, "index-cache");
  const cold = await indexAll(url, s3, indexCacheDir);
  const warm = await indexAll(url, s3, indexCacheDir);

  process.env.EC_INDEX_CACHE_DIR = indexCacheDir;
  const bucket: OpenOptions = { endpoint: s3.endpoint, region: s3.region, credentials: s3.credentials };
  const rows = await bracketedRows(files, url.href, randomClips(values), bucket);
  const result = {
    objects: cold.objects,
    header_bytes_over_object_bytes: Number((cold.indexBytes / cold.bytes).toFixed(4)),
    header_gets_per_object: Number((cold.indexRequests / cold.objects).toFixed(2)),
    index_cold_ms_per_object: Number(((cold.seconds * 1000) / cold.objects).toFixed(1)),
    index_warm_ms_per_object: Number(((warm.seconds * 1000) / warm.objects).toFixed(2)),
    warm_gets: warm.indexRequests,
    warm_over_cold: Number((warm.seconds / cold.seconds).toFixed(3)),
    same_clips: rows.sameClips,
    local_fps: Number(rows.localFps.toFixed(1)),
    s3_fps: Number(rows.remoteFps.toFixed(1)),
    s3_over_local: Number((rows.remoteFps / rows.localFps).toFixed(3)),
  };
  if (values.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else {
    process.stdout.write(
      [
        `${result.objects} × ${values.size} h264 (${values.frames} frames, GOP ${values.gop}) in a loopback s3rver bucket`,
        `indexing: ${result.header_gets_per_object} range GETs and ${(result.header_bytes_over_object_bytes * 100).toFixed(2)}% of the bytes per object; ` +
          `${result.index_cold_ms_per_object} ms cold, ${result.index_warm_ms_per_object} ms warm (${result.warm_gets} GETs) → warm ÷ cold ${result.warm_over_cold}`,
        `throughput (${values.clips} random ${values.clip}-frame clips, same clips both sides: ${result.same_clips}): local files ${result.local_fps} frames/s, s3:// ${result.s3_fps} frames/s → ${result.s3_over_local}×`,
      ].join("\n") + "\n",
    );
  }
} finally {
  await s3.close();
  await rm(dir, { recursive: true, force: true });
}
