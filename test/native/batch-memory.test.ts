/**
 * Batch memory past the pool's cap (EC_NATIVE_POOL_MB) is kept for the next call instead of freed
 * and faulted in afresh: a 1080p GOP of 240 frames is a 746 MB batch, past the 512 MiB default,
 * and zero-filling it page by page cost more than decoding it. Runs in a child process: the cap
 * is read once per process, and page faults are counted per process.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { addonCandidates, findBuild } from "../../native/lib/load.js";
import { indexedVideo, type IndexedVideo, writeDecodeSpec } from "./helpers.js";

const run = promisify(execFile);
let dir: string;
let video: IndexedVideo;
let addon: string;

// The child decodes the whole video in one call twice, collecting the first call's batch in
// between, and reports the minor page faults of the second call.
const CHILD = `
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
const [addon, input] = process.argv.slice(2);
const binding = createRequire(import.meta.url)(addon);
const v = JSON.parse(readFileSync(input, "utf8"));
const bytes = new Uint8Array(readFileSync(v.file));
const decoder = await binding.openDecoder({ codec: v.codec, extradata: new Uint8Array(v.extradata), width: v.width,
  height: v.height, device: "cpu", deviceIndex: 0, threads: 1, output: "native", resizeHeight: 0, resizeWidth: 0 });
const decode = () => decoder.decode(bytes, new Float64Array(v.table), new Uint8Array(v.keys), null);
let batch = await decode();
const first = { frames: batch.frames.length, bytes: batch.buffer.byteLength, own: batch.frames.some((f) => f.buffer) };
batch = undefined;
// The first collection queues the buffer's N-API finalizer; it runs on a later tick, and the
// second collection makes sure the batch is gone before the faults are counted.
for (let i = 0; i < 2; i++) {
  globalThis.gc();
  await new Promise((resolve) => setTimeout(resolve, 50));
}
// A child started between the calls (a fork) must not make the pooled batch fault page by page again.
if (v.spawn) spawnSync("true");
const faults = process.resourceUsage().minorPageFault;
batch = await decode();
console.log(JSON.stringify({ ...first, faults: process.resourceUsage().minorPageFault - faults, again: batch.frames.length }));
`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-native-batch-memory-"));
  // 640x360 decodes into libavcodec's buffers (368 coded rows) and is copied into the batch.
  video = await indexedVideo(dir, { codec: "h264", width: 640, height: 360, frames: 120 });
  addon = findBuild(addonCandidates()).path;
  await writeFile(join(dir, "child.mjs"), CHILD);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Report {
  frames: number;
  bytes: number;
  own: boolean;
  faults: number;
  again: number;
}

async function twoCalls(spawn: boolean): Promise<Report> {
  const spec = await writeDecodeSpec(dir, `spec-${spawn}.json`, video, { spawn });
  const { stdout } = await run(process.execPath, ["--expose-gc", join(dir, "child.mjs"), addon, spec], {
    env: { ...process.env, EC_NATIVE_POOL_MB: "16" },
    maxBuffer: 1 << 20,
  });
  const out = JSON.parse(stdout.trim().split("\n").pop()!) as Report;
  // One batch of 120 copied frames, 41.5 MB: past the 16 MiB cap, within four times it, and past
  // glibc's 32 MiB mmap threshold (a freed batch went back to the kernel).
  expect(out).toMatchObject({ frames: 120, bytes: 120 * 640 * 360 * 1.5, own: false, again: 120 });
  return out;
}

describe("batch memory pool", () => {
  it("reuses a batch larger than EC_NATIVE_POOL_MB on the next call instead of faulting in fresh pages", async () => {
    const out = await twoCalls(false);
    // Before: every page of the second batch was a fresh one (10,125 faults of 4 KiB).
    expect(out.faults).toBeLessThan(out.bytes / 4096 / 4);
  });

  it("keeps a pooled batch out of a forked child, so a spawn between calls costs no faults", async () => {
    const out = await twoCalls(true);
    // Before: the fork write-protected the pooled batch for copy-on-write, and every page of the
    // second call's first write faulted again.
    expect(out.faults).toBeLessThan(out.bytes / 4096 / 4);
  });
});
