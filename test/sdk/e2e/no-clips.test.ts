import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EntryColumns } from "../../../common/dataset-table/entry-columns.js";
import { tableEntry } from "../../../common/dataset-table/entry.js";
import { main as stream } from "../../../sdk/cli/stream.js";
import { open } from "../../../sdk/index.js";
import { LocalDirSource } from "../../../sdk/source/local-dir.js";
import type { DatasetListing, DatasetObject } from "../../../sdk/source/source.js";
import { captureOutput } from "../../helpers/capture-output.js";
import { makeVideo } from "../../helpers/make-video.js";

let dir: string;
let empty: string;
/** Two videos of 10 and 14 frames. */
let short: string;
/** One video of 14 frames. */
let one: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-no-clips-"));
  [empty, short, one] = [join(dir, "empty"), join(dir, "short"), join(dir, "one")];
  await Promise.all([empty, short, one].map((d) => mkdir(d)));
  await makeVideo(short, { codec: "h264", width: 64, height: 48, frames: 10, gop: 5, name: "a.mp4" });
  await makeVideo(short, { codec: "h264", width: 64, height: 48, frames: 14, gop: 5, name: "b.mp4" });
  await makeVideo(one, { codec: "h264", width: 64, height: 48, frames: 14, gop: 5, name: "c.mp4" });
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The local folder with a dataset table, as the edge lists a prefix it keeps one for. */
class Tabled extends LocalDirSource {
  override async list(): Promise<DatasetListing & { readonly objects: readonly DatasetObject[] }> {
    const listing = await super.list();
    return {
      ...listing,
      entries: EntryColumns.from(await Promise.all(listing.objects.map(async (o) => tableEntry(await this.index(o))))),
    };
  }
}

describe("a dataset that plans no clip fails open() with ERR_NO_CLIPS instead of streaming nothing", () => {
  it("an empty folder", async () => {
    await expect(open(empty, { device: "cpu", frames: 16 })).rejects.toMatchObject({
      code: "ERR_NO_CLIPS",
      message: "Expected at least one clip of 16 frames but the dataset holds no objects (an empty folder or prefix?)",
    });
  });

  it("videos all shorter than a clip: how many objects, and the longest video's frame count", async () => {
    const message =
      "Expected at least one clip of 16 frames but none of the dataset's 2 objects holds one: the longest of its 2 videos, b.mp4, has 14 frames";
    for (const align of ["keyframe", "exact"] as const) {
      await expect(open(short, { device: "cpu", frames: 16, align })).rejects.toMatchObject({
        code: "ERR_NO_CLIPS",
        message,
      });
    }
    // Planned from a dataset table, the same.
    await expect(open(short, { device: "cpu", frames: 16 }, { source: new Tabled(short) })).rejects.toMatchObject({
      code: "ERR_NO_CLIPS",
      message,
    });
  });

  it("a stride makes a clip span more frames than it has: the message says how many", async () => {
    await expect(open(one, { device: "cpu", frames: 8, stride: 2 })).rejects.toMatchObject({
      code: "ERR_NO_CLIPS",
      message:
        "Expected at least one clip of 8 frames at stride 2 (15 frames of video) but the dataset's one object holds none: c.mp4 has 14 frames",
    });
    // One frame fewer per clip fits.
    const ds = await open(one, { device: "cpu", frames: 7, stride: 2 });
    expect(ds.totalClips).toBe(1);
    await ds.close();
  });

  it("ec stream says so and exits non-zero", async () => {
    for (const [url, text] of [
      [empty, "holds no objects"],
      [short, "b.mp4, has 14 frames"],
    ] as const) {
      const { code, err } = await captureOutput(() => stream([url, "--device", "cpu", "--frames", "16", "--json"]));
      expect(code, err).toBe(1);
      expect(err).toContain(`[ERR_NO_CLIPS] Expected at least one clip of 16 frames but`);
      expect(err).toContain(text);
    }
  });
});
