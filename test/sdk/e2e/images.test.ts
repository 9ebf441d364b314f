import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalEdge, type LocalEdge } from "../../../sdk/dev/index.js";
import { makeImage } from "../../helpers/make-video.js";
import { mergeCheckpoints, open, type Batch, type OpenOptions, type SdkError } from "../../../sdk/index.js";
import { uploadBytes } from "../../helpers/edge-upload.js";

const run = promisify(execFile);
let dir: string;
let edge: LocalEdge;
let dataset: string;
const local = new Map<string, string>();

/** ffmpeg's rgb24 of the image, scaled (when asked) with the libswscale flags the loader uses. */
async function reference(file: string, size?: readonly [number, number]): Promise<Buffer> {
  const scale = size ? `scale=${size[1]}:${size[0]}:flags=bilinear` : "scale=flags=bilinear";
  const { stdout } = await run(
    "ffmpeg",
    ["-v", "error", "-i", file, "-vf", scale, "-pix_fmt", "rgb24", "-f", "rawvideo", "-"],
    { encoding: "buffer", maxBuffer: 64 << 20 },
  );
  return stdout;
}

const put = (key: string, body: Uint8Array<ArrayBuffer>) => uploadBytes(edge, key, body);

async function drain(
  options: OpenOptions,
): Promise<{ batches: Batch[]; errors: SdkError[]; state: ReturnType<Awaited<ReturnType<typeof open>>["state"]> }> {
  const errors: SdkError[] = [];
  const ds = await open(dataset, { token: edge.token, onError: (e) => errors.push(e), ...options });
  const batches: Batch[] = [];
  try {
    for await (const b of ds) batches.push(b);
  } finally {
    await ds.close();
  }
  return { batches, errors, state: ds.state() };
}

/** Every image of every batch checked against ffmpeg's decode of the local file; returns the keys seen. */
async function checkPixels(batches: readonly Batch[], size?: readonly [number, number]): Promise<string[]> {
  const keys: string[] = [];
  for (const b of batches) {
    const [n, h, w, c] = b.frames.shape;
    expect(b.frames.shape).toHaveLength(4);
    expect(c).toBe(3);
    for (let i = 0; i < n!; i++) {
      const key = b.clips[i]!.key;
      const want = await reference(local.get(key)!, size);
      const got = Buffer.from((b.frames.data as Uint8Array).subarray(i * h! * w! * 3, (i + 1) * h! * w! * 3));
      expect(got.equals(want), key).toBe(true);
      keys.push(key);
    }
  }
  return keys;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-sdk-images-"));
  const started = startLocalEdge({ port: 0, quiet: true, varsDir: dir, persistDir: join(dir, "r2") });
  const shapes = [
    { format: "jpeg", name: "a.jpg" },
    { format: "png", name: "b.png" },
    { format: "webp", name: "c.webp" },
    { format: "png", name: "d.png", alpha: true },
    { format: "jpeg", name: "e.jpg" },
    { format: "webp", name: "f.webp", lossless: true },
    { format: "png", name: "g.png", gray: true },
  ] as const;
  for (const s of shapes) local.set(`img/${s.name}`, await makeImage(dir, { width: 64, height: 48, ...s }));
  edge = await started;
  dataset = `${edge.url}/v1/datasets/img`;
  for (const [key, file] of local) await put(key, new Uint8Array(await readFile(file)));
  // The header (what the index reads) is intact; the scan data stops half way.
  const jpeg = new Uint8Array(await readFile(local.get("img/a.jpg")!));
  await put("img/broken.jpg", jpeg.slice(0, Math.floor(jpeg.length / 2)));
}, 180_000);

afterAll(async () => {
  await edge?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("open() over an image dataset through the local edge", () => {
  it("yields [B, H, W, 3] rgb24 batches equal to ffmpeg's decode, and skips and reports the corrupt image", async () => {
    const { batches, errors } = await drain({ batch: 3, shuffle: false });
    expect(batches.map((b) => b.frames.shape)).toEqual([
      [3, 48, 64, 3],
      [3, 48, 64, 3],
      [1, 48, 64, 3],
    ]);
    expect(batches[0]!.frames.dtype).toBe("uint8");
    expect(await checkPixels(batches)).toEqual([...local.keys()]);
    expect(batches[0]!.clips[0]).toMatchObject({
      key: "img/a.jpg",
      start: 0,
      frames: 1,
      source: { width: 64, height: 48 },
    });
    expect(errors.map((e) => [e.code, e.message.split(":")[0]])).toEqual([["ERR_CORRUPT_IMAGE", "img/broken.jpg"]]);
  });

  it("resizes to options.size, and counts images and errors in stats", async () => {
    const errors: SdkError[] = [];
    const ds = await open(dataset, {
      token: edge.token,
      batch: 4,
      size: [24, 32],
      seed: 3,
      onError: (e) => errors.push(e),
    });
    const batches: Batch[] = [];
    for await (const b of ds) batches.push(b);
    await ds.close();
    expect(batches.every((b) => b.frames.shape.slice(1).join() === "24,32,3")).toBe(true);
    expect((await checkPixels(batches, [24, 32])).sort()).toEqual([...local.keys()].sort());
    expect(ds.stats()).toMatchObject({ clips: 7, frames: 7, errors: { ERR_CORRUPT_IMAGE: 1 } });
  });

  it("partitions ranks exactly, repeats per (seed, epoch), and resumes exactly on another world size", async () => {
    const keysOf = async (o: OpenOptions) =>
      (await drain({ size: [24, 32], ...o })).batches.flatMap((b) => b.clips.map((c) => c.key));
    const all = await keysOf({ seed: 9 });
    expect(all).toHaveLength(7);
    expect(await keysOf({ seed: 9 })).toEqual(all);
    expect(await keysOf({ seed: 9, epoch: 1 })).not.toEqual(all);
    const ranks = await Promise.all([0, 1, 2].map((rank) => keysOf({ seed: 9, rank, world: 3 })));
    expect(ranks.flat().sort()).toEqual([...all].sort());
    expect(ranks.map((r) => r.length).sort()).toEqual([2, 2, 3]);

    // World 2 stops after one image each; world 3 finishes the epoch.
    const seen: string[] = [];
    const states = [];
    for (let rank = 0; rank < 2; rank++) {
      const ds = await open(dataset, { token: edge.token, size: [24, 32], seed: 9, rank, world: 2 });
      for await (const b of ds) {
        seen.push(...b.clips.map((c) => c.key));
        break;
      }
      states.push(ds.state());
      await ds.close();
    }
    const resume = mergeCheckpoints(states);
    const rest = await Promise.all([0, 1, 2].map((rank) => keysOf({ rank, world: 3, resume })));
    expect([...seen, ...rest.flat()].sort()).toEqual([...all].sort());
  });
});
