import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main, takePasses } from "../../../sdk/cli/bench.js";
import { makeVideo } from "../../helpers/make-video.js";
import { captureOutput } from "../../helpers/capture-output.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-bench-cli-"));
  await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 24, gop: 6, bframes: 2, name: "a.mp4" });
  await makeVideo(dir, { codec: "hevc", width: 64, height: 48, frames: 16, gop: 8, name: "b.mp4" });
}, 60_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

const capture = (argv: string[]) => captureOutput(() => main(argv));

describe("ec bench", () => {
  it("streams the same clips once per pass and prints one JSON line with each pass and the ratios", async () => {
    const { code, out, err } = await capture([
      dir,
      "--frames",
      "3",
      "--align",
      "keyframe",
      "--batch",
      "2",
      "--device",
      "cpu",
      "--passes",
      "3",
      "--json",
    ]);
    expect(code, err).toBe(0);
    const lines = out.trim().split("\n");
    expect(lines).toHaveLength(1);
    const r = JSON.parse(lines[0]!) as {
      passes: { pass: number; stats: { clips: number; frames: number }; clips_per_s: number }[];
      vs_first_pass: number[];
    };
    expect(r.passes.map((p) => p.pass)).toEqual([1, 2, 3]);
    // Keyframe-aligned clips of 3 frames: 4 GOPs of 6 in a.mp4, 2 GOPs of 8 in b.mp4.
    for (const p of r.passes) {
      expect(p.stats.clips).toBe(6);
      expect(p.stats.frames).toBe(18);
      expect(p.clips_per_s).toBeGreaterThan(0);
    }
    expect(r.vs_first_pass[0]).toBe(1);
    expect(r.vs_first_pass).toHaveLength(3);
  });

  it("refuses a bad --passes and --md5 with what it expected", async () => {
    expect(() => takePasses(["x", "--passes", "0"])).toThrow(
      'Expected an integer from 1 to 100 for --passes but received "0"',
    );
    expect(takePasses(["x", "--passes=4", "--json"])).toEqual({ passes: 4, rest: ["x", "--json"] });
    const md5 = await capture([dir, "--format", "native", "--md5"]);
    expect(md5.code).toBe(2);
    expect(md5.err).toMatch(/Expected no --md5 with ec bench/);
  });
});
