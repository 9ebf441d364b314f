/**
 * The CUDA kernels' own code (native/src/kernels/kernels.cu, unchanged) run on the CPU through
 * a small shim of CUDA's execution model (cuda-shim/), launched with the grid and block shapes
 * kernels.cc uses on a GPU: thread indexing, bounds, the shared-memory histogram and the
 * atomics must give exactly what the host twins give. On a GPU the same comparison runs in
 * gpu-decode.test.ts.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { convertReference, lumaStatsReference, type HostFrame } from "../../native/index.js";
import { decodeAll, indexedVideo } from "./helpers.js";

const run = promisify(execFile);
let dir: string;
let shim: string;
let frames: HostFrame[];
const W = 320;
const H = 192;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-kernel-shim-"));
  shim = join(dir, "run-kernels");
  const source = join(import.meta.dirname, "cuda-shim/run-kernels.cc");
  await run("g++", ["-std=c++20", "-O2", "-pthread", "-o", shim, source]);
  frames = await decodeAll(await indexedVideo(dir, { codec: "h264", width: W, height: H, frames: 8, bframes: 2 }));
}, 120_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function bytesOf(f: HostFrame): Uint8Array {
  return new Uint8Array(f.data.buffer, f.data.byteOffset, f.data.byteLength);
}

describe("the CUDA kernels on the CPU shim equal their host twins", () => {
  const conversions: [string, number, number, 0 | 1][] = [
    ["rgb24 at the decoded size", W, H, 0],
    ["rgb24 shrunk to 112x96 (odd grid edges)", 112, 96, 0],
    ["rgbf32-planar enlarged to 401x203", 401, 203, 1],
  ];
  it.each(conversions)("ec_convert: %s", async (_name, w, h, output) => {
    const input = join(dir, "frame.yuv");
    const out = join(dir, `out-${w}x${h}`);
    await writeFile(input, bytesOf(frames[3]!));
    await run(shim, ["convert", input, out, String(W), String(H), String(w), String(h), String(output)]);
    const kernel = new Uint8Array(await readFile(out));
    const twin = await convertReference(frames[3]!, {
      output: output === 0 ? "rgb24" : "rgbf32-planar",
      resize: [h, w],
    });
    expect(kernel.length).toBe(bytesOf(twin).length);
    expect(Buffer.from(kernel).equals(Buffer.from(bytesOf(twin)))).toBe(true);
  });

  it.each([1, 5, 9])(
    "ec_luma_stats over a clip at step %i (histogram, row and column sums, frame differences)",
    async (step) => {
      const input = join(dir, "luma.raw");
      const out = join(dir, `stats-${step}`);
      const lumas = frames.map((f) => bytesOf(f).subarray(0, W * H));
      await writeFile(input, Buffer.concat(lumas));
      await run(shim, ["stats", input, out, String(W), String(H), String(step), String(frames.length)], {
        maxBuffer: 1 << 24,
      });
      const raw = await readFile(out);
      const kernel = new Uint32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
      const twin = await lumaStatsReference(
        lumas.map((data) => ({ data, format: "gray", width: W, height: H, pitch: W })),
        step,
      );
      const words = kernel.length / frames.length;
      twin.forEach((s, i) => {
        const r = kernel.subarray(i * words, (i + 1) * words);
        expect(i === 0 ? undefined : r[0]! + r[1]! * 2 ** 32).toBe(s.absDiff);
        expect(r.subarray(2, 258)).toEqual(s.histogram);
        expect(r.subarray(258, 258 + s.gridHeight)).toEqual(s.rowSums);
        expect(r.subarray(258 + s.gridHeight, 258 + s.gridHeight + s.gridWidth)).toEqual(s.colSums);
      });
      expect(twin[1]!.absDiff).toBeGreaterThan(0);
    },
  );
});
