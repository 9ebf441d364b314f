import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { makeImage, makeNpy } from "../../helpers/make-video.js";
import { open } from "../../../sdk/open.js";
import type { SdkError } from "../../../sdk/errors.js";
import type { DecodeClip } from "../../../sdk/pipeline/decode.js";

let dir: string;

/** An .npy made by the fixture, its zeros replaced by these values. */
async function npyWith(
  name: string,
  dtype: string,
  shape: number[],
  values: ArrayLike<number> | ArrayLike<bigint>,
  Ctor: { new (n: number): { buffer: ArrayBufferLike; set(v: never): void } },
): Promise<void> {
  const file = await makeNpy(dir, { dtype, shape, name });
  const bytes = new Uint8Array(await readFile(file));
  const data = new Ctor(values.length);
  data.set(values as never);
  const raw = new Uint8Array(data.buffer);
  bytes.set(raw, bytes.length - raw.length);
  await writeFile(file, bytes);
}

const noDecode: DecodeClip = async () => {
  throw new Error("arrays are never decoded");
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-sdk-npy-"));
  await npyWith("a.npy", "<f4", [2, 3], [0, 1, 2, 3, 4, 5], Float32Array);
  await npyWith("b.npy", "<f4", [2, 3], [10, 11, 12, 13, 14, 15.5], Float32Array);
  await npyWith("c.npy", "<i8", [4], [1n, -2n, 3n, 2n ** 40n], BigInt64Array);
  await makeNpy(dir, { dtype: ">f4", shape: [2], name: "d.npy" });
  await makeImage(dir, { format: "png", width: 8, height: 8, name: "e.png" });
});
afterAll(() => rm(dir, { recursive: true, force: true }));

it("iterates .npy arrays as typed batches of their dtype and shape; other dtypes are reported; an image is a batch of its own", async () => {
  const errors: SdkError[] = [];
  const ds = await open(dir, { batch: 2, shuffle: false, onError: (e) => errors.push(e) }, { decode: noDecode });
  const got = [];
  for await (const b of ds) got.push(b);
  expect(got).toHaveLength(3);
  expect(got[0]!.frames.dtype).toBe("float32");
  expect(got[0]!.frames.shape).toEqual([2, 2, 3]);
  expect(got[0]!.frames.data).toBeInstanceOf(Float32Array);
  expect([...(got[0]!.frames.data as Float32Array)]).toEqual([0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15.5]);
  expect(got[0]!.clips.map((c) => c.key)).toEqual(["a.npy", "b.npy"]);
  expect(got[1]!.frames.dtype).toBe("int64");
  expect(got[1]!.frames.shape).toEqual([1, 4]);
  expect([...(got[1]!.frames.data as BigInt64Array)]).toEqual([1n, -2n, 3n, 2n ** 40n]);
  // Stacked apart from the arrays: its layout differs.
  expect(got[2]!.frames.shape).toEqual([1, 8, 8, 3]);
  expect(got[2]!.clips.map((c) => c.key)).toEqual(["e.png"]);
  expect(errors.map((e) => e.code)).toEqual(["ERR_ARRAY_DTYPE"]);
  expect(ds.stats()).toMatchObject({ clips: 4, frames: 4, errors: { ERR_ARRAY_DTYPE: 1 } });
});

it("a local directory of images streams through the image stage, never the video decoder", async () => {
  const only = await mkdtemp(join(tmpdir(), "ec-sdk-img-"));
  try {
    await makeImage(only, { format: "jpeg", width: 8, height: 8, name: "x.jpg" });
    await makeImage(only, { format: "webp", width: 8, height: 8, name: "y.webp" });
    const ds = await open(only, { batch: 2, size: [4, 6], shuffle: false }, { decode: noDecode });
    const shapes = [];
    for await (const b of ds) shapes.push(b.frames.shape);
    expect(shapes).toEqual([[2, 4, 6, 3]]);
  } finally {
    await rm(only, { recursive: true, force: true });
  }
});
