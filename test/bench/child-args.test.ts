import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readChildArgs, writeChildArgs } from "../../bench/compare/child-args.js";

// The naive row's arguments at the bench's defaults: 1,024 clips, each with a signed URL through the WAN.
const args = {
  clips: Array.from({ length: 1024 }, (_, i) => ({
    url: `https://127.0.0.1:40939/v1/o/bench/video-${String(i % 16).padStart(2, "0")}.mp4?exp=1796300000&kid=k1&sig=${"Zm9v".repeat(11)}`,
    clip: {
      key: `video-${String(i % 16).padStart(2, "0")}.mp4`,
      start: i * 30,
      startSeconds: i,
      frames: 16,
      stride: 1,
    },
  })),
  concurrency: 1,
  batch: 4,
  stepMs: 0,
};

/** Starts a node child with `arg` as its one argument; it prints that argument's length. */
function spawnWith(arg: string): { error?: NodeJS.ErrnoException; stdout: string } {
  const r = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.argv[1].length))", arg], {
    encoding: "utf8",
  });
  return { error: r.error as NodeJS.ErrnoException | undefined, stdout: r.stdout ?? "" };
}

describe("a row child's arguments", () => {
  const dir = mkdtempSync(join(tmpdir(), "ec-child-args-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // Linux caps one argument at 128 KiB (MAX_ARG_STRLEN); other systems cap only the total.
  it.runIf(process.platform === "linux")(
    "cannot pass 1,024 clips inline: one argument over 128 KiB fails to spawn",
    () => {
      const inline = JSON.stringify(args);
      expect(inline.length).toBeGreaterThan(128 * 1024);
      expect(spawnWith(inline).error?.code).toBe("E2BIG");
    },
  );

  it("passes them in a file the child reads back whole", async () => {
    const arg = await writeChildArgs(dir, "naive-args", args);
    const r = spawnWith(arg);
    expect(r.error).toBeUndefined();
    expect(Number(r.stdout)).toBe(arg.length);
    expect(readChildArgs(arg)).toEqual(args);
  });

  it("still reads JSON given inline", () => {
    expect(readChildArgs('{"a":1}')).toEqual({ a: 1 });
    expect(readChildArgs(undefined)).toEqual({});
  });
});
