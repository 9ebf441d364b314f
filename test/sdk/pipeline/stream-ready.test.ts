import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeVideo } from "../../helpers/make-video.js";
import { resolveOptions } from "../../../sdk/options.js";
import type { ScheduledClip } from "../../../sdk/pipeline/clip-context.js";
import type { DecodeClip } from "../../../sdk/pipeline/decode.js";
import { IndexCache } from "../../../sdk/pipeline/index-cache.js";
import { planDataset } from "../../../sdk/pipeline/planner.js";
import { streamBatches } from "../../../sdk/pipeline/stream.js";
import type { ClipSequence } from "../../../sdk/sampler/rank-clips.js";
import { LocalDirSource } from "../../../sdk/source/index.js";

let dir: string;

const decode: DecodeClip = async (req) => ({
  device: "cpu",
  frames: req.keep.map((pts) => ({ data: new Uint8Array(4), pts, width: 2, height: 2, format: "test" })),
});

/** The plan's clips as a sequence whose items are ready only a while after they are asked for, as table pages read lazily. */
class SlowClips implements ClipSequence<ScheduledClip> {
  readonly early: number[] = [];
  private readonly readied = new Set<number>();
  constructor(
    private readonly clips: readonly ScheduledClip[],
    private readonly known = true,
  ) {}
  /** With `known` false, an order of unknown length: its end is where `at` answers undefined. */
  get length(): number {
    return this.known ? this.clips.length : Infinity;
  }
  at(i: number): ScheduledClip | undefined {
    if (!this.readied.has(i)) this.early.push(i);
    return this.clips[i];
  }
  async ready(i: number): Promise<void> {
    await new Promise((r) => setTimeout(r, 1));
    this.readied.add(i);
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-sdk-ready-"));
  await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 48, gop: 8, name: "a.mp4" });
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("the pipeline awaits ready(i) before it plans or reads clip i", () => {
  it.each([true, false])(
    "asks for no clip before it is ready and delivers every clip in order (length known: %s)",
    async (known) => {
      const source = new LocalDirSource(dir);
      const options = resolveOptions({ frames: 8, batch: 2, prefetch: 2, shuffle: false, device: "cpu" }, {});
      const listing = await source.list();
      const indexes = new IndexCache(source);
      const { plan: p } = await planDataset(listing, indexes, options);
      const all = p.objects[0]!.starts.map((start, position) => ({ position, ref: { object: 0, start } }));
      expect(all.length).toBe(6);
      const clips = new SlowClips(all, known);
      const starts: number[] = [];
      for await (const { batch } of streamBatches({
        source,
        listing,
        indexes,
        decode,
        decodeImage: () => Promise.reject(new Error("no images here")),
        options,
        clips,
        onNeeded: () => {},
        onDecoded: () => {},
        onSkip: () => {},
      }))
        for (const c of batch?.clips ?? []) starts.push(c.start);
      expect(starts).toEqual([0, 8, 16, 24, 32, 40]);
      expect(clips.early).toEqual([]);
      await source.close();
    },
  );
});
