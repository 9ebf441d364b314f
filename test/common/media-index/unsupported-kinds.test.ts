import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildIndex, bytesReader, notStreamed } from "../../../common/media-index/index.js";
import { indexLocalFile } from "../../helpers/file-reader.js";
import { ffmpeg, testsrc2 } from "../../helpers/ffmpeg-args.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-kinds-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A short testsrc2 clip in the given container, written by ffmpeg. */
async function encode(name: string, args: string[]): Promise<string> {
  const out = join(dir, name);
  await ffmpeg([...testsrc2(64, 48, 10), "-frames:v", "10", ...args, out]);
  return out;
}

const indexOf = async (file: string) => (await indexLocalFile(file, file.slice(dir.length + 1))).index;

describe("objects of a kind ec does not stream are named by their container", () => {
  const cases: [string, string, string[], RegExp][] = [
    ["MPEG-PS", "e.mpg", ["-c:v", "mpeg2video", "-f", "vob"], /is MPEG-PS/],
    ["AVI", "f.avi", ["-c:v", "libx264", "-preset", "ultrafast"], /is AVI/],
    ["FLV", "g.flv", ["-c:v", "flv"], /is FLV/],
    ["Ogg (Theora)", "h.ogv", ["-c:v", "libtheora"], /is Ogg/],
    ["GIF", "i.gif", [], /is GIF/],
    [
      "raw H.264",
      "j.h264",
      ["-c:v", "libx264", "-preset", "ultrafast", "-f", "h264"],
      /is a raw H\.264 elementary stream/,
    ],
    [
      "raw HEVC",
      "k.hevc",
      ["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "log-level=error", "-f", "hevc"],
      /is a raw HEVC elementary stream/,
    ],
  ];
  it.each(cases)(
    "%s: an ERR_KIND_UNSUPPORTED record",
    async (_name, file, args, message) => {
      const index = await indexOf(await encode(file, args));
      expect(index).toMatchObject({ kind: "error", error: { code: "ERR_KIND_UNSUPPORTED" } });
      expect(index.error!.message).toMatch(message);
      expect(index.error!.message).toMatch(
        /it streams MP4\/MOV and Matroska\/WebM video \(H\.264, HEVC, AV1, VP8, VP9\), MPEG-TS video/,
      );
      expect(notStreamed(index)).toEqual(index.error);
    },
    30_000,
  );

  it("the container is sniffed from the bytes, whatever the name says", async () => {
    const index = await indexOf(await encode("renamed.mp4", ["-c:v", "libx264", "-preset", "ultrafast", "-f", "avi"]));
    expect(index.error).toMatchObject({
      code: "ERR_KIND_UNSUPPORTED",
      message: expect.stringMatching(/^renamed\.mp4 is AVI/),
    });
  });

  it("empty objects are ERR_EMPTY_OBJECT, whatever their name", async () => {
    await writeFile(join(dir, "empty.bin"), "");
    expect((await indexOf(join(dir, "empty.bin"))).error).toEqual({
      code: "ERR_EMPTY_OBJECT",
      message: "empty.bin is empty (0 bytes)",
    });
  });

  it("bytes of no format: kind other, which notStreamed reports as ERR_KIND_UNSUPPORTED", async () => {
    // A leading "G" is the TS sync byte; without another 188 bytes on, the text is no transport stream.
    const index = await buildIndex(bytesReader(new TextEncoder().encode(`Gameplay notes\n${"x".repeat(400)}`)), {
      key: "notes.txt",
      etag: "e",
    });
    expect(index.kind).toBe("other");
    expect(notStreamed(index)).toEqual({
      code: "ERR_KIND_UNSUPPORTED",
      message: expect.stringMatching(/^notes\.txt is no format ec reads; ec streams MP4\/MOV and Matroska/),
    });
  });
});
