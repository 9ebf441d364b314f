import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeVideo } from "../../helpers/make-video.js";
import { cleanEnv, ec, ecSpawn, ensureBuilt, firstLine } from "../../helpers/ec-process.js";

// `ec dev --json` + `ec push` + `ec sign` + plain HTTP reads, all through the built CLI.
describe("ec dev, push and sign end to end", () => {
  let dir: string;
  let dev: ChildProcess;
  let edge: string;
  let token: string;
  let cache: string;
  const files = new Map<string, Buffer>();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ec-cli-e2e-"));
    await ensureBuilt();
    dev = ecSpawn(["dev", "--port", "0", "--persist", join(dir, "r2"), "--json"]);
    const line = await firstLine(dev);
    const parsed = JSON.parse(line) as Record<string, string>;
    expect(Object.keys(parsed).sort()).toEqual(["cache", "edge", "token"]);
    ({ edge, token, cache } = parsed as { edge: string; token: string; cache: string });

    const data = join(dir, "data");
    mkdirSync(join(data, "nested", "deeper"), { recursive: true });
    const video = await makeVideo(join(data, "nested"), {
      codec: "h264",
      width: 64,
      height: 48,
      frames: 20,
      name: "clip.mp4",
    });
    writeFileSync(join(data, "nested", "deeper", "blob.bin"), Buffer.alloc(300_000, 7));
    writeFileSync(join(data, "empty.txt"), "");
    writeFileSync(join(data, "notes with space.txt"), "hello, edge\n");
    files.set("ds/nested/clip.mp4", readFileSync(video));
    files.set("ds/nested/deeper/blob.bin", readFileSync(join(data, "nested", "deeper", "blob.bin")));
    files.set("ds/empty.txt", Buffer.alloc(0));
    files.set("ds/notes with space.txt", Buffer.from("hello, edge\n"));
  });

  afterAll(async () => {
    if (dev && dev.exitCode === null) {
      process.kill(-dev.pid!, "SIGKILL");
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("ec dev --json printed one line with a reachable edge", async () => {
    expect(edge).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${edge}/v1/health`)).status).toBe(200);
    expect((await fetch(`${cache}/v1/health`)).status).toBe(200);
  });

  it("ec push uploads every file under DIR to PREFIX/relative path", async () => {
    const res = await ec(["push", join(dir, "data"), "ds/", "--edge", edge, "--token", token, "--json"]);
    expect(res.stderr).toBe("");
    expect(res.code).toBe(0);
    const summary = JSON.parse(res.stdout.trim()) as { files: number; bytes: number; failed: number; prefix: string };
    expect(summary).toMatchObject({ files: files.size, failed: 0, prefix: "ds" });
    expect(summary.bytes).toBe([...files.values()].reduce((n, b) => n + b.length, 0));
  });

  it("ec sign URLs read back every byte, whole and by range", async () => {
    for (const [key, bytes] of files) {
      const signed = await ec(["sign", key, "--edge", edge, "--exp", "120"]);
      expect(signed.code).toBe(0);
      const url = signed.stdout.trim();
      const whole = await fetch(url);
      expect(whole.status).toBe(200);
      expect(Buffer.from(await whole.arrayBuffer()).equals(bytes)).toBe(true);
      if (bytes.length > 10) {
        const part = await fetch(url, { headers: { range: "bytes=3-9" } });
        expect(part.status).toBe(206);
        expect(part.headers.get("content-range")).toBe(`bytes 3-9/${bytes.length}`);
        expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(3, 10))).toBe(true);
      }
      const forged = new URL(url);
      forged.searchParams.set(
        "sig",
        forged.searchParams.get("sig")!.replace(/^./, (c) => (c === "A" ? "B" : "A")),
      );
      expect((await fetch(forged)).status).toBe(403);
    }
  });

  it("ec push with a wrong token fails with exit 1 and says why", async () => {
    const res = await ec(["push", join(dir, "data"), "other", "--edge", edge, "--token", "nope", "--json"]);
    expect(res.code).toBe(1);
    expect(JSON.parse(res.stdout.trim())).toMatchObject({ files: 0, failed: files.size });
  });

  it("bad arguments exit 2 with a message naming what was expected", async () => {
    const noDir = await ec(["push", join(dir, "missing"), "ds", "--edge", edge, "--token", token]);
    expect(noDir.code).toBe(2);
    expect(noDir.stderr).toMatch(/Expected a directory for DIR/);
    const badKey = await ec(["sign", "../etc/passwd"], cleanEnv({ EC_SIGNING_KEY: "x" }));
    expect(badKey.code).toBe(2);
    expect(badKey.stderr).toMatch(/ERR_INVALID_OPTION.*Expected an object key/);
  });

  it("SIGTERM stops ec dev and the edge with it", async () => {
    const exited = new Promise<number | null>((resolve) => dev.once("exit", resolve));
    dev.kill("SIGTERM");
    expect(await exited).toBe(0);
    await expect(fetch(`${edge}/v1/health`)).rejects.toThrow();
  });
});
