/**
 * A stream of local files loads no part of the edge's client: not undici, not the in-process
 * origin-cache (pino, prom-client), not the preview's PNG encoder. Checked on `ec stream DIR` and
 * on the engine the Python client starts, both from the modules (an ESM loader hook records every
 * module resolved) and from the bundle (undici, once evaluated, installs its global dispatcher).
 */
import { execFile, spawn } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanEnv, ensureBuilt, ROOT } from "../../helpers/ec-process.js";
import { makeVideo } from "../../helpers/make-video.js";

const exec = promisify(execFile);
const EC = join(ROOT, "bin", "ec.js");
const BUNDLE = join(ROOT, "dist", "sdk", "cli", "engine.bundle.cjs");
/** Modules only remote datasets and previews need. */
const REMOTE_ONLY = /\/node_modules\/(undici|pino|prom-client|fast-png|fflate)\/|\/dist\/origin-cache\//;

let dir: string;
let videos: string;
/** Node flags that record each resolved module's URL in the file `EC_TEST_RESOLVED` names. */
let recordFlags: string[];
/** A preload that writes whether undici's global dispatcher exists when the process exits. */
let probe: string;

beforeAll(async () => {
  await ensureBuilt();
  if (!existsSync(BUNDLE) || statSync(BUNDLE).mtimeMs < statSync(join(ROOT, "dist", "sdk", "cli", "main.js")).mtimeMs)
    await exec(process.execPath, [join(ROOT, "scripts", "bundle-engine.mjs")]);
  dir = await mkdtemp(join(tmpdir(), "ec-local-modules-"));
  videos = join(dir, "videos");
  await mkdir(videos);
  await makeVideo(videos, { codec: "h264", width: 32, height: 24, frames: 8, name: "a.mp4" });
  const hooks = join(dir, "hooks.mjs");
  await writeFile(
    hooks,
    [
      'import { appendFileSync } from "node:fs";',
      "export async function resolve(specifier, context, next) {",
      "  const r = await next(specifier, context);",
      '  appendFileSync(process.env.EC_TEST_RESOLVED, r.url + "\\n");',
      "  return r;",
      "}",
    ].join("\n"),
  );
  const register = join(dir, "register.mjs");
  await writeFile(
    register,
    `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
  );
  recordFlags = ["--import", pathToFileURL(register).href];
  probe = join(dir, "probe.cjs");
  await writeFile(
    probe,
    [
      'const { writeFileSync } = require("node:fs");',
      'process.on("exit", () => writeFileSync(process.env.EC_TEST_PROBE, String(globalThis[Symbol.for("undici.globalDispatcher.1")] !== undefined)));',
    ].join("\n"),
  );
}, 120_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

/** `ec stream` on the local folder with `flags` given to node; the clips it streamed. */
async function stream(flags: string[], env: Record<string, string>): Promise<number> {
  const { stdout } = await exec(process.execPath, [...flags, EC, "stream", videos, "--frames", "2", "--json"], {
    env: cleanEnv(env),
  });
  return (JSON.parse(stdout.trim().split("\n").at(-1)!) as { clips: number }).clips;
}

/** One engine session on the local folder, to its end; the batches it sent. */
async function engine(flags: string[], env: Record<string, string>): Promise<number> {
  const child = spawn(process.execPath, [...flags, EC, "engine"], {
    env: cleanEnv(env),
    stdio: ["pipe", "pipe", "inherit"],
  });
  const send = (m: object) => child.stdin.write(`${JSON.stringify(m)}\n`);
  send({ op: "open", ds: 1, url: videos, options: { frames: 2, batch: 2 }, dir: tmpdir() });
  let batches = 0;
  for await (const line of createInterface({ input: child.stdout })) {
    const ev = JSON.parse(line) as { event: string; seq?: number; slot?: number };
    if (ev.event === "opened") send({ op: "mapped", ds: 1 });
    if (ev.event === "batch") {
      batches++;
      send({ op: "ack", ds: 1, seq: ev.seq, release: [ev.slot] });
    }
    if (ev.event === "end" || ev.event === "failed") break;
  }
  child.stdin.end(`${JSON.stringify({ op: "close" })}\n`);
  await new Promise((resolve) => child.once("exit", resolve));
  return batches;
}

const runs = { "ec stream": stream, "ec engine": engine };

describe("a stream of local files", () => {
  for (const [name, run] of Object.entries(runs)) {
    it(`loads none of the edge's client or the PNG encoder (${name}, modules)`, async () => {
      const log = join(dir, `resolved-${name.replace(" ", "-")}.txt`);
      await writeFile(log, "");
      expect(await run(recordFlags, { EC_ENGINE_BUNDLE: "0", EC_TEST_RESOLVED: log })).toBeGreaterThan(0);
      const urls = readFileSync(log, "utf8").trim().split("\n");
      // The hook saw the stream's own modules (mp4box reads the local MP4s)...
      expect(urls.some((u) => u.includes("/node_modules/mp4box/"))).toBe(true);
      // ...and none that only remote datasets and previews need.
      expect(urls.filter((u) => REMOTE_ONLY.test(u))).toEqual([]);
    }, 60_000);

    it(`never evaluates undici (${name}, bundle)`, async () => {
      const out = join(dir, `probe-${name.replace(" ", "-")}.txt`);
      expect(await run(["--require", probe], { EC_ENGINE_BUNDLE: "1", EC_TEST_PROBE: out })).toBeGreaterThan(0);
      expect(readFileSync(out, "utf8")).toBe("false");
    }, 60_000);
  }
});
