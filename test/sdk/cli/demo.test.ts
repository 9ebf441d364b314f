/**
 * `ec demo` (what `npm start` runs) end to end on a local edge in workerd: two ffmpeg-made
 * videos pushed, read back, streamed for two epochs with a simulated training step, and the
 * summary's figures checked in --json; the text summary's wording checked on known figures.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../../sdk/cli/demo.js";
import { demoText, type DemoChecks } from "../../../sdk/cli/demo-summary.js";
import type { DemoStream } from "../../../sdk/cli/stream-demo.js";
import type { StreamStats } from "../../../sdk/stats.js";
import { captureOutput } from "../../helpers/capture-output.js";
import { makeVideo } from "../../helpers/make-video.js";

const exec = promisify(execFile);
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-demo-"));
  await mkdir(join(dir, "videos"));
  await makeVideo(join(dir, "videos"), { codec: "h264", width: 96, height: 64, frames: 48, name: "a.mp4" });
  await makeVideo(join(dir, "videos"), {
    codec: "h264",
    width: 128,
    height: 72,
    frames: 36,
    faststart: true,
    name: "b.mp4",
  });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("ec demo", () => {
  it("streams two epochs at a stated step, the second warm, and writes the first batch's contact sheet", async () => {
    const preview = join(dir, "sheet.png");
    // open() warns ERR_TABLE_MISSING when it plans without the dataset table: a first run must not.
    const warnings: string[] = [];
    const onWarning = (w: Error & { code?: string }) => void warnings.push(`${w.code ?? w.name}: ${w.message}`);
    process.on("warning", onWarning);
    const { code, out, err } = await captureOutput(() =>
      main([
        "--videos",
        join(dir, "videos"),
        "--persist",
        join(dir, "r2"),
        "--preview",
        preview,
        "--step-ms",
        "20",
        "--json",
      ]),
    );
    // Warnings are emitted on the next tick.
    await new Promise((r) => setImmediate(r));
    process.off("warning", onWarning);
    expect(code, err).toBe(0);
    expect(warnings.filter((w) => w.includes("ERR_TABLE_MISSING"))).toEqual([]);
    const s = JSON.parse(out.trim()) as Record<string, unknown> & {
      table_generation: number;
      per_epoch: (StreamStats & { first_batch_s: number; table_generation: number | null })[];
    };
    // Both epochs planned from the table the edge published for the pushed videos.
    expect(s.table_generation).toBeGreaterThan(0);
    expect(s.per_epoch.map((e) => e.table_generation)).toEqual([s.table_generation, s.table_generation]);
    expect(err).toContain(`dataset table generation ${s.table_generation} is ready`);
    // 48 and 36 frames: 6 + 4 exact 8-frame clips per epoch (every frame of each video, the default).
    expect(s).toMatchObject({
      files: 2,
      mismatches: 0,
      epochs: 2,
      step_ms: 20,
      clips: 20,
      frames: 160,
      errors: 0,
      labeled: 20,
      preview,
    });
    expect(s.first_batch_s).toBeGreaterThan(0);
    expect(s.first_batch_s).toBe(s.per_epoch[0]!.first_batch_s);
    expect(s.gpu_idle_ratio).toBeGreaterThanOrEqual(0);
    expect(s.gpu_idle_ratio).toBeLessThanOrEqual(1);
    expect(s.per_epoch[0]!.bytes_fetched).toBeGreaterThan(0);
    expect(s.epoch2_cache_hit_ratio).toBe(1);
    expect(s.per_epoch[1]!.bytes_fetched).toBe(0);
    const { stdout } = await exec("ffprobe", [
      "-v",
      "error",
      "-show_entries",
      "stream=codec_name",
      "-of",
      "csv=p=0",
      preview,
    ]);
    expect(stdout.trim()).toBe("png");
  }, 180_000);

  it("says what each figure means, and presents waiting at a step as GPU idle time", () => {
    const stats = (o: Partial<StreamStats>): StreamStats => ({
      clips: 12,
      frames: 96,
      decoded_frames: 96,
      bytes_fetched: 800_000,
      bytes_needed: 320_000,
      bytes_delivered: 0,
      seconds: 1.2,
      first_batch_s: null,
      stall_ratio: 0.6,
      cache_hit_ratio: 0.25,
      device: "cpu",
      decode_fallbacks: { count: 0, codecs: [] },
      errors: {},
      ...o,
    });
    const checks: DemoChecks = {
      edge: "http://127.0.0.1:1",
      prefix: "demo",
      reads: 8,
      readBytes: 1_000_000,
      mismatches: 0,
      table: { generation: 3, objects: 2, seconds: 11.2 },
      pushed: {
        edge: "http://127.0.0.1:1",
        prefix: "demo",
        files: 2,
        bytes: 500_000,
        seconds: 0.2,
        failed: 0,
        pushed: [],
        errors: [],
      },
    };
    const streamed: DemoStream = {
      cache: "http://127.0.0.1:2",
      preview: { path: "/tmp/x.png", width: 918, height: 512 },
      ok: true,
      epochs: [
        {
          epoch: 0,
          stats: stats({}),
          first_batch_s: 0.41,
          gpu_idle_ratio: 0.03,
          flags: { black: 2 },
          labeled: 12,
          generation: 3,
        },
        {
          epoch: 1,
          stats: stats({ bytes_fetched: 0, cache_hit_ratio: 1, errors: { ERR_DECODE: 1 } }),
          first_batch_s: 0.1,
          gpu_idle_ratio: 0,
          flags: {},
          labeled: 12,
          generation: undefined,
        },
      ],
    };
    const text = demoText(checks, streamed, 50, 6);
    expect(text).toContain("a simulated 50 ms training step per batch");
    expect(text).toContain(
      "epoch 1 (cold): 12 clips, 96 frames in 1.20 s on cpu: 10.0 clips/s, 80.0 frames/s, planned from the dataset table (generation 3)",
    );
    expect(text).toContain("planned from every object's index");
    expect(text).toContain(
      "dataset table generation 3 (2 objects, built by the edge's indexing queue) ready 11.2 s after the push",
    );
    expect(text).toContain("first batch after 0.41 s, then GPU idle 3.0 % at a 50 ms step");
    expect(text).toContain("fetched 0.80 MB from the edge for 0.32 MB of GOP bytes the clips needed (2.50×");
    expect(text).toContain("epoch 2 (warm)");
    expect(text).toContain("cache hits 100 %, 0.00 MB fetched from the edge");
    expect(text).toContain("labels: 24 clips checked by the built-in labelers; flagged black ×2");
    expect(text).toContain("errors: ERR_DECODE ×1 (epoch 2)");
    expect(text).toContain("first batch, as the training loop got it: /tmp/x.png (918x512 px)");
    expect(text).not.toMatch(/stall/i);
    const noStep = demoText(checks, streamed, 0, 6);
    expect(noStep).toContain("no training step (--step-ms 0)");
    expect(noStep).toContain(
      "then waited for data 3.0 % of the time with no training step (fetch and decode set the pace)",
    );
    expect(noStep).not.toMatch(/GPU idle|stall/i);
  });
});
