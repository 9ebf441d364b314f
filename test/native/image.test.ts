import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { decodeImage, frameBytes, NativeError } from "../../native/index.js";
import { makeImage } from "../helpers/make-video.js";

const run = promisify(execFile);
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-native-img-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** ffmpeg's own decode of the image as raw bytes: its native pixel format, or converted with `-pix_fmt`. */
async function ffmpegRaw(file: string, args: string[] = []): Promise<Buffer> {
  const { stdout } = await run("ffmpeg", ["-v", "error", "-i", file, ...args, "-f", "rawvideo", "-"], {
    encoding: "buffer",
    maxBuffer: 64 << 20,
  });
  return stdout;
}

async function bytesOf(file: string): Promise<Uint8Array> {
  return new Uint8Array(await readFile(file));
}

type Fixture = Parameters<typeof makeImage>[1];

describe("decodeImage", () => {
  const pngs: Fixture[] = [
    { format: "png", width: 65, height: 47 },
    { format: "png", width: 64, height: 48, alpha: true },
    { format: "png", width: 64, height: 48, gray: true },
  ];
  it.each(pngs)("PNG %#: rgb24 is pixel-exact against ffmpeg -pix_fmt rgb24", async (o) => {
    const file = await makeImage(dir, o);
    const frame = await decodeImage(await bytesOf(file));
    expect(frame.format).toBe("rgb24");
    expect(frame.shape).toEqual([o.height, o.width, 3]);
    expect(Buffer.from(frameBytes(frame)).equals(await ffmpegRaw(file, ["-pix_fmt", "rgb24"]))).toBe(true);
  });

  const lossy: (Fixture & { pixFmt: string })[] = [
    { format: "jpeg", width: 65, height: 47, pixFmt: "yuvj420p" },
    { format: "webp", width: 65, height: 47, pixFmt: "yuv420p" },
    { format: "webp", width: 64, height: 48, alpha: true, pixFmt: "yuva420p" },
    { format: "webp", width: 64, height: 48, lossless: true, pixFmt: "argb" },
  ];
  it.each(lossy)(
    "$format $width x $height: native output equals ffmpeg's own decode ($pixFmt), byte for byte",
    async ({ pixFmt, ...o }) => {
      const file = await makeImage(dir, o);
      const frame = await decodeImage(await bytesOf(file), { output: "native" });
      expect(frame.format).toBe(pixFmt);
      expect(frame.shape).toEqual([o.height, o.width]);
      expect(Buffer.from(frameBytes(frame)).equals(await ffmpegRaw(file))).toBe(true);
    },
  );

  // Widths off the 16-pixel SIMD groups: libswscale left the last pixels of each row unwritten once.
  it.each([
    ["jpeg", 65],
    ["webp", 67],
    ["jpeg", 64],
  ] as const)("%s %i wide: rgb24 equals ffmpeg's conversion with the same libswscale flags", async (format, width) => {
    const file = await makeImage(dir, { format, width, height: 48, name: `rgb-${width}.${format}` });
    const frame = await decodeImage(await bytesOf(file), { format });
    expect(
      Buffer.from(frameBytes(frame)).equals(
        await ffmpegRaw(file, ["-vf", "scale=flags=bilinear", "-pix_fmt", "rgb24"]),
      ),
    ).toBe(true);
  });

  it("resizes like video frames and writes planar float on request", async () => {
    const file = await makeImage(dir, { format: "png", width: 64, height: 48, name: "resize.png" });
    const bytes = await bytesOf(file);
    const small = await decodeImage(bytes, { resize: [24, 32] });
    expect(small.shape).toEqual([24, 32, 3]);
    expect(
      Buffer.from(frameBytes(small)).equals(
        await ffmpegRaw(file, ["-vf", "scale=32:24:flags=bilinear", "-pix_fmt", "rgb24"]),
      ),
    ).toBe(true);
    const planar = await decodeImage(bytes, { output: "rgbf32-planar" });
    expect(planar.shape).toEqual([3, 48, 64]);
    const rgb = await decodeImage(bytes);
    // Same pixels as rgb24: R plane first, values / 255.
    expect((planar.data as Float32Array)[5]).toBeCloseTo((rgb.data as Uint8Array)[15]! / 255, 6);
    expect((planar.data as Float32Array)[48 * 64 + 5]).toBeCloseTo((rgb.data as Uint8Array)[16]! / 255, 6);
  });

  it.each(["jpeg", "png", "webp"] as const)("a truncated %s rejects with ERR_CORRUPT_IMAGE", async (format) => {
    const bytes = await bytesOf(await makeImage(dir, { format, width: 64, height: 48, name: `cut.${format}` }));
    await expect(decodeImage(bytes.slice(0, Math.floor(bytes.length * 0.6)))).rejects.toMatchObject({
      name: "NativeError",
      code: "ERR_CORRUPT_IMAGE",
    });
  });

  it("damaged PNG data (its CRC no longer matches) and a JPEG with garbage scan data reject with ERR_CORRUPT_IMAGE", async () => {
    for (const format of ["png", "jpeg"] as const) {
      const bytes = await bytesOf(await makeImage(dir, { format, width: 64, height: 48, name: `bad.${format}` }));
      const mid = Math.floor(bytes.length / 2);
      bytes.fill(0x55, mid, mid + 40);
      await expect(decodeImage(bytes), format).rejects.toMatchObject({ code: "ERR_CORRUPT_IMAGE" });
    }
  });

  it("bytes of no image format, an empty file and bad arguments fail with typed errors", async () => {
    await expect(decodeImage(new Uint8Array([1, 2, 3, 4]))).rejects.toMatchObject({ code: "ERR_UNSUPPORTED_IMAGE" });
    await expect(decodeImage(new Uint8Array(0), { format: "png" })).rejects.toMatchObject({
      code: "ERR_CORRUPT_IMAGE",
    });
    const png = await bytesOf(await makeImage(dir, { format: "png", width: 8, height: 8, name: "tiny.png" }));
    // Told the wrong format: the JPEG decoder finds no JPEG in PNG bytes.
    await expect(decodeImage(png, { format: "jpeg" })).rejects.toMatchObject({ code: "ERR_CORRUPT_IMAGE" });
    await expect(decodeImage(png, { output: "yuv" as never })).rejects.toThrow(
      'Expected one of native, rgb24, rgbf32-planar for output but received "yuv"',
    );
    await expect(decodeImage(png, { resize: [0, 4] })).rejects.toBeInstanceOf(NativeError);
    await expect(decodeImage("x" as never)).rejects.toMatchObject({ code: "ERR_INVALID_ARGUMENT" });
  });

  it("decodes many images at once off the event loop, each one right", async () => {
    const files = await Promise.all(
      [0, 1, 2, 3, 4, 5].map((i) =>
        makeImage(dir, {
          format: i % 2 ? "png" : "jpeg",
          width: 32 + 2 * i,
          height: 24,
          name: `many-${i}.${i % 2 ? "png" : "jpg"}`,
        }),
      ),
    );
    const frames = await Promise.all(files.map(async (f) => decodeImage(await bytesOf(f), { output: "native" })));
    for (let i = 0; i < files.length; i++) {
      expect(Buffer.from(frameBytes(frames[i]!)).equals(await ffmpegRaw(files[i]!))).toBe(true);
    }
  });
});
