import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { allocDevice, devices, readInto } from "../../native/index.js";

let dir: string;
let file: string;
const content = randomBytes(3 * 65536 + 123);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-native-read-"));
  file = join(dir, "block.bin");
  await writeFile(file, content);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("readInto into host memory", () => {
  it.each([
    [0, 65536],
    [4096, 65536],
    [1, 3],
    [65536 * 2 + 17, 65536],
  ])("offset %i, length %i is byte-exact and says mode host", async (offset, length) => {
    const target = new Uint8Array(length + 8).fill(0xee);
    const result = await readInto(file, offset, length, target);
    expect(result).toEqual({ bytesRead: length, mode: "host" });
    expect(Buffer.from(target.subarray(0, length)).equals(content.subarray(offset, offset + length))).toBe(true);
    // Nothing past `length` is touched.
    expect(target.subarray(length).every((b) => b === 0xee)).toBe(true);
  });

  it("a read past the end of the file is short, not an error", async () => {
    const target = new Uint8Array(1000);
    const result = await readInto(file, content.length - 100, 1000, target);
    expect(result.bytesRead).toBe(100);
    expect(Buffer.from(target.subarray(0, 100)).equals(content.subarray(content.length - 100))).toBe(true);
  });

  it("errors: missing file, too small a target, bad offset", async () => {
    await expect(readInto(join(dir, "nope"), 0, 10, new Uint8Array(10))).rejects.toMatchObject({
      code: "ERR_FILE_NOT_FOUND",
    });
    await expect(readInto(file, 0, 10, new Uint8Array(5))).rejects.toThrow(
      "Expected a target of at least 10 bytes for target but received",
    );
    await expect(readInto(file, -1, 10, new Uint8Array(10))).rejects.toThrow(
      "Expected a non-negative integer for offset but received -1",
    );
    await expect(readInto(file, 0, 10, {} as Uint8Array)).rejects.toMatchObject({ code: "ERR_INVALID_ARGUMENT" });
  });
});

const gpu = devices().cuda.available;

describe.skipIf(gpu)("readInto to a device on a host without a GPU", () => {
  it("allocDevice says the device is unavailable and why", () => {
    expect(() => allocDevice("cuda:0", 4096)).toThrow(expect.objectContaining({ code: "ERR_DEVICE_UNAVAILABLE" }));
  });
});

describe.skipIf(!gpu)("readInto to device memory (needs a CUDA GPU)", () => {
  it("is byte-exact and reports cufile or compat as devices() predicts", async () => {
    const target = allocDevice("cuda:0", 65536);
    const result = await readInto(file, 4096, 65536, target);
    expect(result.bytesRead).toBe(65536);
    expect(result.mode).toBe(devices().readMode.device);
    expect(Buffer.from(target.toHost()).equals(content.subarray(4096, 4096 + 65536))).toBe(true);
  });
});
