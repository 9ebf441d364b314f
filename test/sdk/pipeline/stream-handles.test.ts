/**
 * A stream lets go of the dataset's files when its iteration ends (run out or broken off, clips
 * in flight included), and `ds.close()` leaves none open: nothing is left for the garbage
 * collector to close.
 * Real ffmpeg-made video in a local directory; descriptors counted in /proc/self/fd.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openUnder } from "../../helpers/open-fds.js";
import { makeVideo } from "../../helpers/make-video.js";
import { open } from "../../../sdk/index.js";

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-stream-handles-"));
  for (const name of ["a.mp4", "b.mp4", "c.mp4"])
    await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 60, gop: 10, name });
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const OPTIONS = { frames: 4, batch: 2, size: [24, 32] as [number, number], device: "cpu", seed: 3, prefetch: 6 };

describe("file handles of a stream over a local directory", () => {
  it("holds none once the iteration has run out", async () => {
    const ds = await open(dir, OPTIONS);
    let batches = 0;
    for await (const _ of ds) batches++;
    expect(batches).toBeGreaterThan(2);
    expect(await openUnder(dir)).toBe(0);
    await ds.close();
  });

  it("holds none once the consumer broke off, with clips still in flight", async () => {
    const ds = await open(dir, OPTIONS);
    for await (const _ of ds) break;
    expect(await openUnder(dir)).toBe(0);
    await ds.close();
  });

  it("holds none after close(), even when close() follows a break at once", async () => {
    for (let i = 0; i < 5; i++) {
      const ds = await open(dir, OPTIONS);
      let n = 0;
      for await (const _ of ds) if (++n === 2) break;
      await ds.close();
    }
    // Reads still in flight at close() end soon after; none may open a file that stays open.
    await new Promise((r) => setTimeout(r, 500));
    expect(await openUnder(dir)).toBe(0);
  });
});
