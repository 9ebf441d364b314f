import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main as inspect } from "../../../sdk/cli/inspect.js";
import { main as stream } from "../../../sdk/cli/stream.js";
import { open, type SdkError } from "../../../sdk/index.js";
import { setTimeout as sleep } from "node:timers/promises";
import type { IndexV1 } from "../../../common/schema/index.js";
import { LocalDirSource } from "../../../sdk/source/local-dir.js";
import type { DatasetObject } from "../../../sdk/source/source.js";
import { captureOutput } from "../../helpers/capture-output.js";
import { makeVideo } from "../../helpers/make-video.js";
import { ffmpeg, testsrc2 } from "../../helpers/ffmpeg-args.js";

let dir: string;
/** A folder with one streamable video among objects that stream nothing. */
let mixed: string;
/** A folder of .avi, .flv and .mpg only. */
let unsupported: string;

async function encode(out: string, args: string[]): Promise<void> {
  await ffmpeg([...testsrc2(64, 48, 10), "-frames:v", "20", ...args, out]);
}

async function containers(into: string): Promise<void> {
  await encode(join(into, "b.avi"), ["-c:v", "libx264", "-preset", "ultrafast"]);
  await encode(join(into, "c.flv"), ["-c:v", "flv"]);
  await encode(join(into, "d.mpg"), ["-c:v", "mpeg2video", "-f", "vob"]);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-not-streamed-"));
  mixed = join(dir, "mixed");
  unsupported = join(dir, "unsupported");
  await mkdir(join(mixed, "_ec", "labels"), { recursive: true });
  await mkdir(unsupported);
  await makeVideo(mixed, { codec: "h264", width: 64, height: 48, frames: 24, gop: 8, name: "a.mp4" });
  await containers(mixed);
  await containers(unsupported);
  await writeFile(join(mixed, "empty.mp4"), "");
  await writeFile(join(mixed, "notes.txt"), "recorded with OBS\n");
  await symlink(join(dir, "nowhere.mp4"), join(mixed, "gone.mp4"));
  // ec's own files under the reserved prefix are no objects of the dataset, as on the edge.
  await writeFile(join(mixed, "_ec", "labels", "x.json"), "{}");
}, 60_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const reasons = {
  "b.avi": ["ERR_KIND_UNSUPPORTED", /^b\.avi is AVI, which ec does not stream/],
  "c.flv": ["ERR_KIND_UNSUPPORTED", /^c\.flv is FLV, which ec does not stream/],
  "d.mpg": ["ERR_KIND_UNSUPPORTED", /^d\.mpg is MPEG-PS, which ec does not stream/],
  "empty.mp4": ["ERR_EMPTY_OBJECT", /^empty\.mp4 is empty/],
  "gone.mp4": ["ERR_UNREADABLE_OBJECT", /^gone\.mp4 cannot be read: ENOENT/],
  "notes.txt": ["ERR_KIND_UNSUPPORTED", /^notes\.txt is no format ec reads/],
} as const;

describe("no object streams nothing without a word", () => {
  it("each object that streams nothing gets a typed error naming what it is, counted in stats().errors", async () => {
    const errors: SdkError[] = [];
    const ds = await open(mixed, { device: "cpu", frames: 4, align: "keyframe", onError: (e) => errors.push(e) });
    let clips = 0;
    for await (const b of ds) clips += b.clips.length;
    await ds.close();
    expect(clips).toBe(3);
    expect(ds.stats().errors).toEqual({ ERR_KIND_UNSUPPORTED: 4, ERR_EMPTY_OBJECT: 1, ERR_UNREADABLE_OBJECT: 1 });
    const byKey = new Map(ds.skipped.map((s) => [s.key, s.error]));
    expect([...byKey.keys()].sort()).toEqual(Object.keys(reasons));
    for (const [key, [code, message]] of Object.entries(reasons)) {
      expect(byKey.get(key)).toMatchObject({ code, message: expect.stringMatching(message) });
    }
    expect(errors).toHaveLength(6);
  });

  it("a folder of .avi, .flv and .mpg fails open() with the first one's error, by path and by file:// URL", async () => {
    for (const url of [unsupported, pathToFileURL(unsupported).href]) {
      const failure = open(url, { device: "cpu" });
      await expect(failure).rejects.toMatchObject({
        code: "ERR_KIND_UNSUPPORTED",
        message: expect.stringMatching(
          /^b\.avi is AVI, which ec does not stream.*; nothing else streams either \(2 ERR_KIND_UNSUPPORTED\)$/,
        ),
      });
    }
  });

  it("the first error is the listing's first, whatever order the indexes finish in", async () => {
    // Later objects' indexes come back first.
    class Reversed extends LocalDirSource {
      override async index(object: DatasetObject): Promise<IndexV1> {
        const order = ["b.avi", "c.flv", "d.mpg"];
        await sleep((order.length - order.indexOf(object.key)) * 40);
        return super.index(object);
      }
    }
    await expect(open(unsupported, { device: "cpu" }, { source: new Reversed(unsupported) })).rejects.toMatchObject({
      message: expect.stringMatching(/^b\.avi is AVI/),
    });
  });

  it("ec stream says why it has nothing to stream and exits non-zero", async () => {
    const { code, err } = await captureOutput(() => stream([unsupported, "--device", "cpu", "--json"]));
    expect(code, err).toBe(1);
    expect(err).toMatch(/\[ERR_KIND_UNSUPPORTED\] b\.avi is AVI/);
  });

  it("ec inspect takes the local folder (path and file://) and lists every such object", async () => {
    for (const url of [mixed, pathToFileURL(mixed).href]) {
      const { code, out, err } = await captureOutput(() => inspect([url, "--json"]));
      expect(code, err).toBe(0);
      const s = JSON.parse(out);
      expect(s).toMatchObject({ dataset: mixed, objects: 7, codecs: { h264: 1 }, frames: 24 });
      expect(s.errors.map((e: { key: string }) => e.key)).toEqual(Object.keys(reasons));
      for (const e of s.errors as { key: keyof typeof reasons; code: string; message: string }[]) {
        expect(e.code).toBe(reasons[e.key][0]);
        expect(e.message).toMatch(reasons[e.key][1]);
      }
    }
    const one = await captureOutput(() => inspect([mixed, "--index", "b.avi"]));
    expect(one.code).toBe(1);
    expect(one.out).toMatch(/error\s+ERR_KIND_UNSUPPORTED: b\.avi is AVI/);
    const video = await captureOutput(() => inspect([pathToFileURL(mixed).href, "--index", "a.mp4"]));
    expect(video.code).toBe(0);
    expect(video.out).toMatch(/samples\s+24/);
    expect(video.out).toMatch(/frames\s+24, rotation 0°/);
  });
});
