import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { NativeUnavailableError } from "../../native/index.js";
import { addonCandidates, loadFirst } from "../../native/lib/load.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-native-load-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("the loader", () => {
  it("tries every build and throws one message that lists each failure and what to do", async () => {
    const broken = join(dir, "ec_native.node");
    await writeFile(broken, "not an ELF file");
    const missing = join(dir, "Release", "ec_native.node");
    let error: unknown;
    try {
      loadFirst([missing, broken]);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(NativeUnavailableError);
    const e = error as NativeUnavailableError;
    expect(e.code).toBe("ERR_NATIVE_UNAVAILABLE");
    expect(e.message).toContain(`${missing}: not built`);
    expect(e.message).toContain(`${broken}: `);
    expect(e.message).toMatch(/npm run setup/);
  });

  it("with nothing built, names the build command and the system packages it needs", () => {
    expect(() => loadFirst([join(dir, "none.node")])).toThrow(
      /npm run setup.*libavcodec-dev libavutil-dev libswscale-dev/s,
    );
  });

  it("looks for the shipped prebuilt for this platform after the local builds", () => {
    const paths = addonCandidates();
    const prebuilt = paths.findIndex((p) =>
      p.endsWith(join("native", "prebuilds", `${process.platform}-${process.arch}`, "ec_native.node")),
    );
    const release = paths.findIndex((p) => p.endsWith(join("native", "build", "Release", "ec_native.node")));
    expect(release).toBeGreaterThanOrEqual(0);
    expect(prebuilt).toBeGreaterThan(release);
  });
});
