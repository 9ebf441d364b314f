import { closeSync, ftruncateSync, openSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mapShared } from "../../native/index.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-map-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("mapShared", () => {
  it("writes through to the file, also after its descriptor is closed", () => {
    const path = join(dir, "slot");
    const fd = openSync(path, "w+");
    ftruncateSync(fd, 8192);
    const memory = new Uint8Array(mapShared(fd, 8192));
    closeSync(fd);
    memory.set([5, 6, 7], 4096);
    expect([...readFileSync(path).subarray(4096, 4099)]).toEqual([5, 6, 7]);
  });

  it("says what it expected of its arguments and why the kernel refused", () => {
    expect(() => mapShared(-1, 10)).toThrow(
      expect.objectContaining({
        code: "ERR_INVALID_ARGUMENT",
        message: "Expected an open file descriptor for fd but received -1",
      }),
    );
    expect(() => mapShared(0, 0)).toThrow(expect.objectContaining({ code: "ERR_INVALID_ARGUMENT" }));
    const path = join(dir, "read-only");
    closeSync(openSync(path, "w"));
    const fd = openSync(path, "r");
    try {
      expect(() => mapShared(fd, 4096)).toThrow(
        expect.objectContaining({ code: "ERR_MAP_FAILED", message: expect.stringContaining("mmap failed") }),
      );
    } finally {
      closeSync(fd);
    }
  });
});
