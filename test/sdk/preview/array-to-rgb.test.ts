import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../../sdk/cli/stream.js";
import { arrayToRgb, frameToRgb } from "../../../sdk/preview/index.js";
import { captureOutput } from "../../helpers/capture-output.js";

const exec = promisify(execFile);
const gray = (rgb: Uint8Array) => Array.from({ length: rgb.length / 3 }, (_, i) => rgb[i * 3]!);
const frame = (format: string, values: ArrayBufferView) => ({
  data: new Uint8Array(values.buffer, values.byteOffset, values.byteLength),
  width: 0,
  height: 0,
  format,
});

/** A .npy file as numpy writes it (version 1.0, header padded to 64 bytes). */
async function npy(file: string, descr: string, shape: number[], values: ArrayBufferView): Promise<void> {
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(", ")}${shape.length === 1 ? "," : ""}), }`;
  header += " ".repeat((64 - ((10 + header.length + 1) % 64)) % 64) + "\n";
  const head = Buffer.alloc(10);
  head.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);
  head.writeUInt16LE(header.length, 8);
  await writeFile(
    file,
    Buffer.concat([head, Buffer.from(header), Buffer.from(values.buffer, values.byteOffset, values.byteLength)]),
  );
}

describe("arrays as pictures", () => {
  it("a float grid is gray, scaled from its own minimum to its maximum, NaN black", () => {
    const rgb = arrayToRgb(frame("npy:<f4:2x3", new Float32Array([-1, 0, 1, 2, 3, Number.NaN])));
    expect([rgb.width, rgb.height]).toEqual([3, 2]);
    expect(gray(rgb.data)).toEqual([0, 64, 128, 191, 255, 0]);
  });

  it("an [H, W, 3] uint8 array is an image as is; [H, W, 4] drops alpha", () => {
    const pixels = Uint8Array.from({ length: 2 * 2 * 4 }, (_, i) => i);
    const rgb = frameToRgb(frame("npy:|u1:2x2x4", pixels));
    expect([rgb.width, rgb.height]).toEqual([2, 2]);
    expect(Array.from(rgb.data)).toEqual([0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14]);
  });

  it("any shape shows its last axis across, and a long vector is shrunk to a tile", () => {
    const rgb = arrayToRgb(
      frame(
        "npy:<i8:4096",
        new BigInt64Array(4096).map((_, i) => BigInt(i)),
      ),
    );
    expect([rgb.width, rgb.height]).toEqual([256, 1]);
    expect(gray(rgb.data)[255]).toBe(Math.round((4080 / 4095) * 255));
    const cube = arrayToRgb(frame("npy:<u2:2x3x5", new Uint16Array(30)));
    expect([cube.width, cube.height]).toEqual([5, 6]);
  });

  it("refuses what is not a numeric array, by name", () => {
    expect(() => arrayToRgb(frame("npy:<U8:3", new Uint8Array(96)))).toThrow(
      /Expected a numeric \.npy array for a picture but received "npy:<U8:3"/,
    );
  });
});

describe("ec stream --preview on a folder of arrays", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "ec-preview-npy-"));
    await npy(
      join(dir, "a.npy"),
      "<f4",
      [24, 32],
      Float32Array.from({ length: 24 * 32 }, (_, i) => i),
    );
    await npy(
      join(dir, "b.npy"),
      "<f4",
      [24, 32],
      Float32Array.from({ length: 24 * 32 }, (_, i) => -i),
    );
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("writes a contact sheet with one gray tile per array", async () => {
    const out = join(dir, "sheet.png");
    const {
      code,
      out: stdout,
      err,
    } = await captureOutput(() => main([dir, "--batch", "2", "--preview", out, "--json"]));
    expect(err).not.toContain("ERR_PREVIEW_FORMAT");
    expect(code).toBe(0);
    expect(JSON.parse(stdout.trim())).toMatchObject({ clips: 2, preview: out });
    const { stdout: size } = await exec("ffprobe", [
      "-v",
      "error",
      "-show_entries",
      "stream=width,height",
      "-of",
      "csv=p=0",
      out,
    ]);
    expect(size.trim()).toBe(`320,${4 + 2 * (11 + 24 + 4)}`);
  });
});
