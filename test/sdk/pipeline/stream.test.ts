import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeVideo } from "../../helpers/make-video.js";
import { open } from "../../../sdk/open.js";
import type { OpenOptions } from "../../../sdk/options.js";
import type { DecodeClip, DecodeRequest } from "../../../sdk/pipeline/decode.js";
import {
  LocalDirSource,
  type DatasetListing,
  type DatasetObject,
  type PlannedRange,
} from "../../../sdk/source/index.js";
import { EntryColumns } from "../../../common/dataset-table/entry-columns.js";
import { tableEntry } from "../../../common/dataset-table/entry.js";
import { mergeCheckpoints } from "../../../sdk/state/checkpoint.js";
import { StreamStats } from "../../../sdk/stats.js";
import type { SdkError } from "../../../sdk/errors.js";
import { EcError } from "../../../common/errors.js";

let dir: string;

/** A stand-in decoder: one 4-byte "frame" per kept pts whose bytes say which packet it came from. */
function fakeDecoder(log: DecodeRequest[] = []): DecodeClip {
  return async (req) => {
    log.push(req);
    expect(req.packets[0]!.keyframe).toBe(true);
    return {
      device: "cpu",
      frames: req.keep.map((pts) => {
        const p = req.packets.find((x) => x.pts === pts)!;
        const h = createHash("md5")
          .update(req.data.subarray(p.offset, p.offset + p.size))
          .digest();
        return { data: new Uint8Array(h.subarray(0, 4)), pts, width: 2, height: 2, format: "test" };
      }),
    };
  };
}

async function collect(options: OpenOptions, decode = fakeDecoder()) {
  const errors: SdkError[] = [];
  const ds = await open(
    dir,
    { device: "cpu", onError: (e) => errors.push(e), ...options },
    { source: new LocalDirSource(dir), decode },
  );
  const clips: { key: string; start: number; position: number }[] = [];
  for await (const b of ds) {
    expect(b.frames.shape).toEqual([b.clips.length, options.frames ?? 16, 4]);
    for (const c of b.clips) clips.push({ key: c.key, start: c.start, position: c.position });
  }
  return { ds, clips, errors };
}

const ids = (c: readonly { key: string; start: number }[]) => c.map((x) => `${x.key}@${x.start}`);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-sdk-stream-"));
  await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 48, gop: 8, name: "a.mp4" });
  await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 40, gop: 8, bframes: 2, name: "b.mp4" });
  await mkdir(join(dir, "sub"));
  await makeVideo(dir, {
    codec: "h264",
    width: 64,
    height: 48,
    frames: 32,
    gop: 8,
    faststart: true,
    name: "sub/c.mp4",
  });
  await writeFile(join(dir, "broken.mp4"), Buffer.from("this is not a video at all"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("open() over a local directory with a stand-in decoder", () => {
  it("yields every keyframe-aligned clip once, reports the corrupt object and goes on", async () => {
    const { ds, clips, errors } = await collect({ frames: 8, batch: 3, shuffle: false });
    // 48/8 + 40/8 + 32/8 keyframe clips.
    expect(clips).toHaveLength(6 + 5 + 4);
    expect(new Set(ids(clips)).size).toBe(15);
    expect(errors.map((e) => e.message)).toEqual([expect.stringContaining("broken.mp4")]);
    const s = ds.stats();
    expect(s.clips).toBe(15);
    expect(s.frames).toBe(120);
    expect(Object.values(s.errors)).toEqual([1]);
    expect(s.bytes_needed).toBeGreaterThan(0);
    expect(s.bytes_fetched).toBeGreaterThanOrEqual(s.bytes_needed);
    // ds.stats() is the wire shape, exactly.
    expect(StreamStats.strict().parse(s)).toEqual(s);
  });

  it("decodes exact starts from the GOP keyframe and keeps only the clip's frames", async () => {
    const log: DecodeRequest[] = [];
    const { clips } = await collect(
      { frames: 3, stride: 2, align: "exact", shuffle: false, batch: 4 },
      fakeDecoder(log),
    );
    expect(clips.filter((c) => c.key === "a.mp4").map((c) => c.start)).toEqual([0, 5, 10, 15, 20, 25, 30, 35, 40]);
    const second = log.find(
      (r) =>
        r.packets.length > 0 &&
        r.keep.length === 3 &&
        r.track.samples.pts.length === 48 &&
        r.keep[0] === r.track.samples.pts[5],
    );
    expect(second).toBeDefined();
    // Frame 5 lives in the GOP starting at frame 0: decode from there.
    expect(second!.packets[0]!.pts).toBe(second!.track.samples.pts[0]);
  });

  it("is deterministic per (seed, epoch) and differs across epochs", async () => {
    const a = ids((await collect({ frames: 8, seed: 5, epoch: 1, shuffleBuffer: 4 })).clips);
    const b = ids((await collect({ frames: 8, seed: 5, epoch: 1, shuffleBuffer: 4 })).clips);
    const c = ids((await collect({ frames: 8, seed: 5, epoch: 2, shuffleBuffer: 4 })).clips);
    expect(b).toEqual(a);
    expect(c).not.toEqual(a);
    expect([...c].sort()).toEqual([...a].sort());
  });

  it("partitions ranks exactly and resumes on a different world size with nothing lost or repeated", async () => {
    const all = ids((await collect({ frames: 8, seed: 1 })).clips).sort();
    // Run 1: world 3, each rank stops after a different number of batches.
    const states = [];
    const seen: string[] = [];
    for (let rank = 0; rank < 3; rank++) {
      const ds = await open(
        dir,
        { frames: 8, seed: 1, rank, world: 3, batch: 1 },
        { source: new LocalDirSource(dir), decode: fakeDecoder() },
      );
      let n = 0;
      for await (const b of ds) {
        seen.push(...ids(b.clips));
        if (++n === rank + 1) break;
      }
      states.push(ds.state());
    }
    expect(seen).toHaveLength(1 + 2 + 3);
    // Run 2: world 2 from the merged checkpoint (JSON round trip as a real job would).
    const resume = JSON.parse(JSON.stringify(mergeCheckpoints(states)));
    const rest: string[][] = [];
    for (let rank = 0; rank < 2; rank++) rest.push(ids((await collect({ frames: 8, rank, world: 2, resume })).clips));
    expect(Math.abs(rest[0]!.length - rest[1]!.length)).toBeLessThanOrEqual(1);
    expect([...seen, ...rest.flat()].sort()).toEqual(all);
    // A lone rank's checkpoint would repeat the other ranks' clips: refused.
    await expect(collect({ frames: 8, resume: states[0] })).rejects.toMatchObject({ code: "ERR_RESUME_INCOMPLETE" });
    await expect(collect({ frames: 4, resume })).rejects.toMatchObject({ code: "ERR_RESUME_MISMATCH" });
  });

  it("resumes one rank alone from its own checkpoint, twice, as the uninterrupted rank would go on", async () => {
    const base = { frames: 8, seed: 3, world: 3, batch: 1, align: "exact", hop: 4 } as const;
    /** Rank `rank`'s clips from `resume`, stopping after `stop` batches; its checkpoint through JSON. */
    async function take(rank: number, resume: OpenOptions["resume"], stop = Infinity) {
      const ds = await open(
        dir,
        { ...base, rank, device: "cpu", ...(resume ? { resume } : {}) },
        { source: new LocalDirSource(dir), decode: fakeDecoder() },
      );
      const seen: string[] = [];
      let n = 0;
      if (stop > 0)
        for await (const b of ds) {
          seen.push(...ids(b.clips));
          if (++n === stop) break;
        }
      return { seen, state: JSON.parse(JSON.stringify(ds.state())) };
    }
    // From a merged checkpoint of three ranks that stopped at different places, then alone.
    const first = await Promise.all([0, 1, 2].map((rank) => take(rank, undefined, rank + 1)));
    const merged = mergeCheckpoints(first.map((r) => r.state));
    expect(merged.base).toBeUndefined();
    const whole = (await take(1, merged)).seen;
    const a = await take(1, merged, 2);
    expect(a.state.base).toBe(merged.consumed);
    const b = await take(1, a.state, 1);
    const c = await take(1, b.state);
    expect([...a.seen, ...b.seen, ...c.seen]).toEqual(whole);
    // The ranks of the last run merge as any others do: with the other ranks' runs from `merged`, the epoch.
    const others = await Promise.all([0, 2].map((rank) => take(rank, merged)));
    const all = ids((await collect({ frames: 8, seed: 3, align: "exact", hop: 4 })).clips).sort();
    const delivered = [...first.flatMap((r) => r.seen), ...whole, ...others.flatMap((r) => r.seen)];
    expect(delivered.sort()).toEqual(all);
    const end = mergeCheckpoints([others[0]!.state, c.state, others[1]!.state]);
    expect(end.count).toBe(all.length);
    // A fresh rank's checkpoint resumes alone too (nothing was consumed when it opened).
    const fresh = await take(2, undefined, 1);
    expect(fresh.state.base).toBe("");
    expect([...fresh.seen, ...(await take(2, fresh.state)).seen]).toEqual((await take(2, undefined)).seen);
    // Alone it resumes its own rank of its own world only.
    await expect(take(0, a.state)).rejects.toMatchObject({ code: "ERR_RESUME_INCOMPLETE" });
    await expect(collect({ ...base, rank: 1, world: 2, resume: a.state })).rejects.toMatchObject({
      code: "ERR_RESUME_INCOMPLETE",
    });
  });

  it("keeps at most prefetch clips in flight ahead of a consumer that stops pulling", async () => {
    let started = 0;
    const inner = fakeDecoder();
    const ds = await open(
      dir,
      { frames: 2, batch: 2, prefetch: 3, workers: 2, align: "exact" },
      {
        source: new LocalDirSource(dir),
        decode: (r) => {
          started++;
          return inner(r);
        },
      },
    );
    expect(ds.clipCount).toBeGreaterThan(40);
    const it = ds[Symbol.asyncIterator]();
    await it.next();
    await new Promise((r) => setTimeout(r, 100));
    expect(started).toBeLessThanOrEqual(2 + 3);
    await it.return?.(undefined);
  });

  it("runs the labels and filter hooks, and a filtered clip still counts as consumed", async () => {
    const { ds, clips } = await collect({
      frames: 8,
      shuffle: false,
      labels: (c: { start: number }) => ({ even: c.start % 16 === 0 }),
      filter: (c: { labels: Record<string, unknown> }) => c.labels.even === true,
    });
    expect(clips.every((c) => c.start % 16 === 0)).toBe(true);
    expect(ds.state().count).toBe(15);
  });

  it("skips a truncated object, reported with its key, while the rest streams", async () => {
    const bytes = await readFile(join(dir, "sub/c.mp4"));
    const tdir = await mkdtemp(join(tmpdir(), "ec-sdk-trunc-"));
    try {
      await writeFile(join(tdir, "cut.mp4"), bytes.subarray(0, Math.floor(bytes.length * 0.6)));
      await writeFile(join(tdir, "whole.mp4"), bytes);
      const errors: SdkError[] = [];
      const ds = await open(
        tdir,
        { frames: 8, shuffle: false, onError: (e) => errors.push(e) },
        { source: new LocalDirSource(tdir), decode: fakeDecoder() },
      );
      const got = [];
      for await (const b of ds) got.push(...b.clips);
      expect(got.map((c) => c.key)).toEqual(["whole.mp4", "whole.mp4", "whole.mp4", "whole.mp4"]);
      expect(errors).toHaveLength(1);
      expect(errors[0]!.message).toContain("cut.mp4");
      expect(ds.stats().errors[errors[0]!.code]).toBe(1);
    } finally {
      await rm(tdir, { recursive: true, force: true });
    }
  });

  it("counts and reports each clip the decoder rejects, by code, and streams the others", async () => {
    const inner = fakeDecoder();
    const failing: DecodeClip = async (r) => {
      if (r.track.samples.pts.length === 40) throw Object.assign(new Error("bad slice"), { code: "ERR_DECODE" });
      return inner(r);
    };
    const { ds, clips, errors } = await collect({ frames: 8, batch: 4 }, failing);
    expect(clips).toHaveLength(10);
    expect(clips.some((c) => c.key === "b.mp4")).toBe(false);
    expect(errors.filter((e) => e.code === "ERR_CLIP_FAILED" && e.message.startsWith("b.mp4"))).toHaveLength(5);
    expect(ds.stats().errors.ERR_CLIP_FAILED).toBe(5);
    // Every position is settled at the end of the stream, failed ones included.
    expect(ds.state().count).toBe(15);
  });

  it("stops the stream with the error when the host cannot decode at all (no device), instead of skipping every clip", async () => {
    const noDevice: DecodeClip = async () => {
      throw new EcError("ERR_DEVICE_UNAVAILABLE", "no CUDA device");
    };
    const errors: SdkError[] = [];
    const ds = await open(
      dir,
      { frames: 8, device: "cuda:0", onError: (e) => errors.push(e) },
      { source: new LocalDirSource(dir), decode: noDevice },
    );
    await expect(
      (async () => {
        for await (const _ of ds) void _;
      })(),
    ).rejects.toMatchObject({ code: "ERR_DEVICE_UNAVAILABLE" });
    expect(errors.map((e) => e.code)).toEqual([expect.any(String)]); // only the corrupt object, reported at open
  });
});

it("refuses an unknown shuffle name before any I/O", async () => {
  let listed = false;
  const source = new LocalDirSource("/nonexistent");
  source.list = async () => {
    listed = true;
    throw new Error("listed");
  };
  await expect(open("/nonexistent", { shuffle: "shufle" }, { source, decode: fakeDecoder() })).rejects.toMatchObject({
    code: "ERR_INVALID_OPTION",
  });
  expect(listed).toBe(false);
});

it("plans the first window before its clips are read when every index takes a round trip", async () => {
  let current = new Set<string>();
  let unplanned = 0;
  // Planned from a dataset table (no index read at open), each index a round trip away, as from an edge.
  class FarIndexes extends LocalDirSource {
    override async list(): Promise<DatasetListing & { readonly objects: readonly DatasetObject[] }> {
      const listing = await super.list();
      const local = new LocalDirSource(dir);
      return {
        ...listing,
        entries: EntryColumns.from(
          await Promise.all(listing.objects.map(async (o) => tableEntry(await local.index(o)))),
        ),
      };
    }
    override async index(object: DatasetObject) {
      await new Promise((r) => setTimeout(r, 30));
      return super.index(object);
    }
    override plan(ranges: readonly PlannedRange[]): void {
      current = new Set(ranges.map((r) => `${r.object.key}:${r.offset}:${r.length}`));
    }
    override async read(object: DatasetObject, offset: number, length: number): Promise<Uint8Array> {
      await new Promise((r) => setImmediate(r));
      if (!current.has(`${object.key}:${offset}:${length}`)) unplanned++;
      return super.read(object, offset, length);
    }
  }
  const ds = await open(
    dir,
    { frames: 2, prefetch: 2, batch: 1, seed: 4 },
    { source: new FarIndexes(dir), decode: fakeDecoder() },
  );
  for await (const _ of ds) void _;
  expect(ds.clipCount).toBeGreaterThan(8);
  expect(unplanned).toBe(0);
});

it("resolves each clip's byte range once however often its window is restated", async () => {
  const seen = new Set<PlannedRange>();
  let planned = 0;
  class Recording extends LocalDirSource {
    override plan(ranges: readonly PlannedRange[]): void {
      planned += ranges.length;
      for (const r of ranges) seen.add(r);
    }
  }
  const ds = await open(
    dir,
    { frames: 2, align: "exact", prefetch: 2, batch: 1 },
    { source: new Recording(dir), decode: fakeDecoder() },
  );
  for await (const _ of ds) void _;
  // Restated: most ranges went out in more than one plan, yet each clip's was made once.
  expect(planned).toBeGreaterThan(2 * ds.clipCount);
  expect(seen.size).toBe(ds.clipCount);
});

it("keeps each clip's byte range in the cache's current plan until it is read (a plan replaces the last one)", async () => {
  let current = new Set<string>();
  let unplanned = 0;
  let reads = 0;
  class Recording extends LocalDirSource {
    override plan(ranges: readonly PlannedRange[]): void {
      current = new Set(ranges.map((r) => `${r.object.key}:${r.offset}:${r.length}`));
    }
    override async read(object: DatasetObject, offset: number, length: number): Promise<Uint8Array> {
      reads++;
      // Plans are sent asynchronously: give a pending one its turn before judging.
      await new Promise((r) => setImmediate(r));
      if (!current.has(`${object.key}:${offset}:${length}`)) unplanned++;
      return super.read(object, offset, length);
    }
  }
  const ds = await open(
    dir,
    { frames: 2, align: "exact", prefetch: 2, batch: 1 },
    { source: new Recording(dir), decode: fakeDecoder() },
  );
  for await (const _ of ds) void _;
  expect(reads).toBe(ds.clipCount);
  expect(reads).toBeGreaterThan(40);
  expect(unplanned).toBe(0);
});
