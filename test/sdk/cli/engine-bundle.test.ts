import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeVideo } from "../../helpers/make-video.js";
import { ensureBuilt, ROOT } from "../../helpers/ec-process.js";

const cli = join(ROOT, "dist", "sdk", "cli");
const bundle = join(cli, "engine.bundle.cjs");

/** One engine session of `bin` (an ec.js): open the folder, read every event to the end, close; the events' names. */
async function session(bin: string, dir: string, env: NodeJS.ProcessEnv = {}): Promise<string[]> {
  const child = spawn(process.execPath, [bin, "engine"], {
    env: { ...process.env, ...env },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const events: string[] = [];
  const lines = createInterface({ input: child.stdout });
  const send = (m: object) => child.stdin.write(`${JSON.stringify(m)}\n`);
  send({ op: "open", ds: 1, url: dir, options: { frames: 2, size: [16, 16], batch: 2 }, dir: tmpdir() });
  for await (const line of lines) {
    const ev = JSON.parse(line) as { event: string; seq?: number; slot?: number };
    events.push(ev.event);
    if (ev.event === "opened") send({ op: "mapped", ds: 1 });
    if (ev.event === "batch") send({ op: "ack", ds: 1, seq: ev.seq, release: [ev.slot] });
    if (ev.event === "end" || ev.event === "failed") break;
  }
  child.stdin.end(`${JSON.stringify({ op: "close" })}\n`);
  await new Promise((resolve) => child.once("exit", resolve));
  return events;
}

describe("ec engine from its bundle", () => {
  let dir: string;
  /** bin/ec.js and the bundle alone in a tree of their own (no dist/ modules), so only the bundle can run. */
  let alone: string;
  let cache: string;
  beforeAll(async () => {
    await ensureBuilt();
    if (!existsSync(bundle) || statSync(bundle).mtimeMs < statSync(join(cli, "main.js")).mtimeMs)
      execFileSync(process.execPath, [join(ROOT, "scripts", "bundle-engine.mjs")]);
    dir = mkdtempSync(join(tmpdir(), "ec-engine-bundle-"));
    mkdirSync(join(dir, "videos"));
    await makeVideo(join(dir, "videos"), { codec: "h264", width: 32, height: 24, frames: 12, name: "a.mp4" });
    const tree = join(dir, "tree");
    mkdirSync(join(tree, "bin"), { recursive: true });
    mkdirSync(join(tree, "dist", "sdk", "cli"), { recursive: true });
    for (const f of ["ec.js", "bundle-runner.cjs"]) copyFileSync(join(ROOT, "bin", f), join(tree, "bin", f));
    for (const f of ["main.js", "engine.bundle.cjs"]) copyFileSync(join(cli, f), join(tree, "dist", "sdk", "cli", f));
    alone = join(tree, "bin", "ec.js");
    cache = join(tree, "dist", "sdk", "cli", "engine.bundle.cache");
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const addon = { EC_NATIVE_PATH: join(ROOT, "native", "build", "Release", "ec_native.node") };

  it("streams a dataset, writes V8's code cache once and then starts from it", async () => {
    const first = await session(alone, join(dir, "videos"), addon);
    expect(first[0]).toBe("opened");
    expect(first.filter((e) => e === "batch").length).toBeGreaterThan(0);
    expect(first.at(-1)).toBe("end");
    // A second engine accepts the cache (one it rejected it would write again).
    const written = statSync(cache).mtimeMs;
    expect(await session(alone, join(dir, "videos"), addon)).toEqual(first);
    expect(statSync(cache).mtimeMs).toBe(written);
  }, 60_000);

  it("runs `ec stream` from the bundle too (no start-up spent loading modules)", () => {
    const out = execFileSync(process.execPath, [alone, "stream", join(dir, "videos"), "--frames", "2", "--json"], {
      env: { ...process.env, ...addon },
      encoding: "utf8",
    });
    const stats = JSON.parse(out.trim().split("\n").at(-1)!) as { clips: number; frames: number };
    expect(stats.clips).toBe(6);
    expect(stats.frames).toBe(12);
  }, 60_000);

  it("gives the events of the unbundled engine (EC_ENGINE_BUNDLE=0)", async () => {
    const modules = await session(join(ROOT, "bin", "ec.js"), join(dir, "videos"), { EC_ENGINE_BUNDLE: "0" });
    expect(modules.at(-1)).toBe("end");
    expect(await session(alone, join(dir, "videos"), addon)).toEqual(modules);
  }, 60_000);
});
