/**
 * `ec stream`'s text summary: the waiting figure is presented as GPU idle time only where a
 * training step was simulated; without one it says that fetch and decode set the pace, not a
 * fault. Both report the time to the first batch.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../../sdk/cli/stream.js";
import { captureOutput } from "../../helpers/capture-output.js";
import { makeVideo } from "../../helpers/make-video.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-stream-summary-"));
  await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 24, name: "a.mp4" });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("ec stream's summary", () => {
  it("without a training step, does not present waiting for data as a fault", async () => {
    const { code, err } = await captureOutput(() => main([dir, "--frames", "4", "--batch", "2"]));
    expect(code).toBe(0);
    expect(err).toMatch(
      /first batch after \d+\.\d\d s; waited for data \d+\.\d % of the time with no training step \(expected: fetch and decode set the pace/,
    );
    expect(err).not.toMatch(/stall|GPU idle/i);
  });

  it("with --step-ms, reports what a GPU at that step would have idled after the first batch", async () => {
    const { code, err } = await captureOutput(() => main([dir, "--frames", "4", "--batch", "2", "--step-ms", "20"]));
    expect(code).toBe(0);
    expect(err).toMatch(/first batch after \d+\.\d\d s; then GPU idle \d+\.\d % at a 20 ms step/);
    expect(err).toContain("of GOP bytes the clips needed");
  });
});
