import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalEdge, type LocalEdge } from "../../../sdk/dev/index.js";
import { startCache, UpstreamStatusError, type CacheService } from "../../../origin-cache/index.js";
import { ffmpegFrameMd5s as ffmpegMd5s, expectFramesMatch } from "../../helpers/ffmpeg-md5.js";
import { makeVideo } from "../../helpers/make-video.js";
import { mergeCheckpoints, open, StreamStats, type OpenOptions, type SdkError } from "../../../sdk/index.js";
import { main as stream } from "../../../sdk/cli/stream.js";
import { inProcessCache, type ByteCache } from "../../../sdk/source/cache-client.js";
import { EdgeSource } from "../../../sdk/source/edge-source.js";
import { edgeFetch, type EdgeFetch } from "../../../sdk/source/edge-fetch.js";
import { captureOutput } from "../../helpers/capture-output.js";
import { uploadBytes } from "../../helpers/edge-upload.js";
import { COLD_VIDEO, expectLocatesPerWindow } from "../../helpers/cold-locates.js";

let dir: string;
let edge: LocalEdge;
let dataset: string;
const local = new Map<string, string>();
const expectedMd5 = new Map<string, string[]>();

const put = (key: string, body: Uint8Array<ArrayBuffer>) => uploadBytes(edge, key, body);

async function keysOf(options: OpenOptions): Promise<{ ids: string[]; errors: SdkError[] }> {
  const errors: SdkError[] = [];
  const ds = await open(dataset, {
    token: edge.token,
    device: "cpu",
    frames: 4,
    onError: (e) => errors.push(e),
    ...options,
  });
  const ids: string[] = [];
  try {
    for await (const b of ds) ids.push(...b.clips.map((c) => `${c.key}@${c.start}`));
  } finally {
    await ds.close();
  }
  return { ids, errors };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-sdk-edge-"));
  const started = startLocalEdge({ port: 0, quiet: true, varsDir: dir, persistDir: join(dir, "r2") });
  local.set(
    "e2e/a.mp4",
    await makeVideo(dir, { codec: "h264", width: 96, height: 64, frames: 36, gop: 6, bframes: 2 }),
  );
  local.set(
    "e2e/b.mp4",
    await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 30, gop: 10, faststart: true, audio: true }),
  );
  local.set("e2e/sub/c.mp4", await makeVideo(dir, { codec: "hevc", width: 64, height: 48, frames: 24, gop: 8 }));
  for (const [key, file] of local) expectedMd5.set(key, await ffmpegMd5s(file));
  edge = await started;
  dataset = `${edge.url}/v1/datasets/e2e`;
  for (const [key, file] of local) await put(key, new Uint8Array(await readFile(file)));
  await put("e2e/broken.mp4", new Uint8Array(await readFile(local.get("e2e/a.mp4")!)).slice(0, 3000));
}, 180_000);

afterAll(async () => {
  await edge?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("open() against a local edge", () => {
  it("delivers every frame byte-equal to ffmpeg's decode of the local file, and skips the corrupt object", async () => {
    const errors: SdkError[] = [];
    const ds = await open(dataset, {
      token: edge.token,
      frames: 3,
      stride: 2,
      align: "exact",
      format: "native",
      batch: 4,
      device: "cpu",
      onError: (e) => errors.push(e),
    });
    let frames = 0;
    for await (const b of ds) {
      frames += expectFramesMatch(b, (key) => expectedMd5.get(key)!);
    }
    // Tiled clips of span 5: 36 → 7, 30 → 6, 24 → 4.
    expect(frames).toBe((7 + 6 + 4) * 3);
    expect(errors.map((e) => [e.code, e.message.split(":")[0]])).toEqual([["ERR_TRUNCATED", "e2e/broken.mp4"]]);
    const s = ds.stats();
    expect(s.errors).toEqual({ ERR_TRUNCATED: 1 });
    // Overlapping GOPs of tiled clips are read again (cache hits), but each object's bytes cross
    // the link at most once, the corrupt object's 3,000 included.
    let objectBytes = 3000;
    for (const file of local.values()) objectBytes += (await stat(file)).size;
    expect(s.bytes_fetched).toBeGreaterThan(0);
    expect(s.bytes_fetched).toBeLessThanOrEqual(objectBytes);
    expect(s.cache_hit_ratio).toBeGreaterThan(0);
    await ds.close();
  });

  it("partitions ranks exactly, is deterministic per (seed, epoch), and resumes exactly on another world size", async () => {
    const all = (await keysOf({ seed: 4 })).ids;
    expect((await keysOf({ seed: 4 })).ids).toEqual(all);
    expect(new Set(all).size).toBe(all.length);
    const ranks = await Promise.all([0, 1].map((rank) => keysOf({ seed: 4, rank, world: 2 })));
    expect([...ranks[0]!.ids, ...ranks[1]!.ids].sort()).toEqual([...all].sort());

    // World 3, each rank stops early; then world 2 finishes the epoch.
    const seen: string[] = [];
    const states = [];
    for (let rank = 0; rank < 3; rank++) {
      const ds = await open(dataset, { token: edge.token, device: "cpu", frames: 4, seed: 4, rank, world: 3 });
      let n = 0;
      for await (const b of ds) {
        seen.push(...b.clips.map((c) => `${c.key}@${c.start}`));
        if (++n > rank) break;
      }
      states.push(ds.state());
      await ds.close();
    }
    const resume = mergeCheckpoints(states);
    const rest = await Promise.all([0, 1].map((rank) => keysOf({ rank, world: 2, resume })));
    const after = [...seen, ...rest.flatMap((r) => r.ids)];
    expect(after.sort()).toEqual([...all].sort());
  });

  it("streams through an origin-cache service, and the second epoch is served from it", async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), "ec-sdk-cache-"));
    let svc: CacheService | undefined;
    try {
      svc = await startCache({
        upstreams: [edge.url],
        dir: cacheDir,
        maxBytes: 64 << 20,
        blockSize: 64 << 10,
        logLevel: "silent",
      });
      const first = await open(dataset, { token: edge.token, cache: svc.url, device: "cpu", frames: 4 });
      for await (const _ of first) void _;
      await first.close();
      const second = await open(dataset, { token: edge.token, cache: svc.url, device: "cpu", frames: 4, epoch: 1 });
      let clips = 0;
      for await (const b of second) clips += b.clips.length;
      await second.close();
      expect(clips).toBe(first.stats().clips);
      expect(second.stats().cache_hit_ratio).toBe(1);
      expect(second.stats().bytes_fetched).toBe(0);
      expect(first.stats().bytes_fetched).toBeGreaterThan(0);
    } finally {
      await svc?.close();
      await rm(cacheDir, { recursive: true, force: true });
    }
  });

  it("locates a cold stream through the cache with one batch per plan window, reorder reads included", async () => {
    // A GOP run reads two samples past its clip: planned with it, those reads need no locate of their own.
    const md5s = new Map<string, string[]>();
    for (const name of ["a", "b", "c"]) {
      const file = await makeVideo(dir, { ...COLD_VIDEO, name: `cold-${name}.mp4` });
      md5s.set(`cold/${name}.mp4`, await ffmpegMd5s(file));
      await put(`cold/${name}.mp4`, new Uint8Array(await readFile(file)));
    }
    await expectLocatesPerWindow(edge.url, `${edge.url}/v1/datasets/cold`, { token: edge.token }, md5s);
  });

  it("renews signed URLs when the edge refuses them (expired) and streams on without an error", async () => {
    const inner = await inProcessCache(edge.url, 16 << 20);
    let refused = 0;
    const seen = new Set<string>();
    // The first read of each object is answered as an expired signature would be.
    const expiring: ByteCache = {
      ...inner,
      read: async (url, offset, length, etag) => {
        const key = new URL(url).pathname;
        if (!seen.has(key)) {
          seen.add(key);
          refused++;
          throw new UpstreamStatusError(url, 403, "ERR_SIGNATURE_EXPIRED");
        }
        return inner.read(url, offset, length, etag);
      },
    };
    const errors: SdkError[] = [];
    const ds = await open(
      dataset,
      { token: edge.token, device: "cpu", frames: 4, prefetch: 1, onError: (e) => errors.push(e) },
      { source: new EdgeSource(dataset, edge.token, expiring) },
    );
    let clips = 0;
    for await (const b of ds) clips += b.clips.length;
    await ds.close();
    expect(refused).toBe(3);
    expect(clips).toBe((await keysOf({})).ids.length);
    expect(errors.map((e) => e.code)).toEqual(["ERR_TRUNCATED"]);
  });

  it("asks for indexes over the control connection the table and signed URLs take, not one of their own", async () => {
    const control = edgeFetch();
    const paths: string[] = [];
    const counting: EdgeFetch = {
      fetch: ((input: string | URL | Request, init?: RequestInit) => {
        paths.push(new URL(input instanceof Request ? input.url : String(input)).pathname);
        return control.fetch(input, init);
      }) as typeof fetch,
      close: () => control.close(),
    };
    const source = new EdgeSource(dataset, edge.token, await inProcessCache(edge.url, 16 << 20), { control: counting });
    const ds = await open(dataset, { token: edge.token, device: "cpu", frames: 4 }, { source });
    let clips = 0;
    for await (const b of ds) clips += b.clips.length;
    await ds.close();
    expect(clips).toBe((await keysOf({})).ids.length);
    // Each object's index once, the truncated one's included (its clips fail as they are read).
    const indexes = paths.filter((p) => p.startsWith("/v1/index/")).sort();
    expect(indexes).toEqual(["a.mp4", "b.mp4", "broken.mp4", "sub/c.mp4"].map((k) => `/v1/index/e2e/${k}`));
  });

  it("pins the first plan's objects at the cache as their URLs are signed, before that plan is sent", async () => {
    const inner = await inProcessCache(edge.url, 16 << 20);
    const calls: { kind: "pin" | "plan"; paths: string[] }[] = [];
    const path = (url: string) => new URL(url).pathname;
    const recording: ByteCache = {
      ...inner,
      plan: (ranges) => {
        calls.push({ kind: "plan", paths: ranges.map((r) => path(r.url)) });
        inner.plan(ranges);
      },
      pin: (objects) => {
        calls.push({ kind: "pin", paths: objects.map((o) => path(o.url)) });
        inner.pin!(objects);
      },
    };
    const ds = await open(
      dataset,
      { token: edge.token, device: "cpu", frames: 4 },
      { source: new EdgeSource(dataset, edge.token, recording) },
    );
    for await (const _ of ds) void _;
    await ds.close();
    const first = calls.findIndex((c) => c.kind === "plan");
    expect(first).toBeGreaterThan(0);
    const pinned = new Set(calls.slice(0, first).flatMap((c) => c.paths));
    // Every object of the first plan was pinned before it, and only then: later objects are not.
    expect(calls[first]!.paths.every((p) => pinned.has(p))).toBe(true);
    expect(calls.slice(first).filter((c) => c.kind === "pin")).toEqual([]);
  });

  it("ec stream --format native --md5 prints key,frame_index,md5 equal to ffmpeg, and --json one summary line", async () => {
    const { code, out, err } = await captureOutput(() =>
      stream([
        dataset,
        "--token",
        edge.token,
        "--frames",
        "2",
        "--stride",
        "3",
        "--format",
        "native",
        "--md5",
        "--json",
        "--device",
        "cpu",
        "--limit",
        "5",
      ]),
    );
    expect(code, err).toBe(0);
    const lines = out.trim().split("\n");
    const summary = JSON.parse(lines.pop()!);
    expect(summary).toMatchObject({ clips: 5, frames: 10, errors: { ERR_TRUNCATED: 1 } });
    expect(StreamStats.parse(summary)).toEqual(summary);
    // Frames decoded to deliver them, the ones before each clip's first frame included.
    expect(summary.decoded_frames).toBeGreaterThanOrEqual(summary.frames);
    expect(typeof summary.first_batch_s).toBe("number");
    expect(lines).toHaveLength(10);
    for (const line of lines) {
      const [key, index, md5] = line.split(",");
      expect(md5).toBe(expectedMd5.get(key!)![Number(index)]);
    }
  });
});
