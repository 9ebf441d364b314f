/**
 * Outputs larger than one ArrayBuffer may be on Node before 22 (4 GiB): a decode call whose batch
 * is past it, and a shared mapping that large. Each runs in a child process, since the failure
 * they guard against is an abort (a double free), not an exception.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { findBuild, addonCandidates } from "../../native/lib/load.js";
import { indexedVideo, type IndexedVideo, writeDecodeSpec } from "./helpers.js";

const run = promisify(execFile);
const FOUR_GIB = 2 ** 32;
// 4 frames of 9472x9472 rgbf32-planar: 4 x 1,076,625,408 bytes, just past 4 GiB in one call.
const SIDE = 9472;
let dir: string;
let video: IndexedVideo;
let addon: string;

// The child loads the addon itself and prints what it got as one JSON line.
const CHILD = `
import { createRequire } from "node:module";
import { openSync, readFileSync } from "node:fs";
const [addon, mode, input] = process.argv.slice(2);
const binding = createRequire(import.meta.url)(addon);
const report = (o) => console.log(JSON.stringify(o));
if (mode === "map") {
  const fd = openSync(input, "r+");
  try {
    binding.mapShared(fd, 2 ** 32 + 4096);
    report({ mapped: true });
  } catch (e) {
    report({ code: e.code });
  }
} else {
  const v = JSON.parse(readFileSync(input, "utf8"));
  const bytes = new Uint8Array(readFileSync(v.file));
  const open = () => binding.openDecoder({ codec: v.codec, extradata: new Uint8Array(v.extradata), width: v.width,
    height: v.height, device: "cpu", deviceIndex: 0, threads: 1, output: "rgbf32-planar", resizeHeight: v.side, resizeWidth: v.side });
  const decode = (d, n) => d.decode(bytes, new Float64Array(v.table.slice(0, n * 4)), new Uint8Array(v.keys.slice(0, n)), null);
  const view = (batch, f) => new Float32Array(f.buffer ?? batch.buffer, f.offset, f.bytes / 4);
  // The first frame decoded alone (a batch under the limit): a few of its samples, kept apart from its 1 GB.
  const one = await decode(await open(), 1);
  const n = one.frames[0].bytes / 4;
  const at = [0, 1, n >> 1, n - 1];
  const first = at.map((i) => view(one, one.frames[0])[i]);
  const all = await decode(await open(), v.keys.length);
  report({
    frames: all.frames.map((f) => ({ pts: f.pts, length: view(all, f).length, own: f.buffer !== undefined })),
    total: all.frames.reduce((s, f) => s + f.bytes, 0),
    sameAsAlone: at.every((i, k) => view(all, all.frames[0])[i] === first[k]),
    inRange: all.frames.every((f) => at.every((i) => { const x = view(all, f)[i]; return x >= 0 && x <= 1; })),
  });
}
`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-native-large-"));
  video = await indexedVideo(dir, { codec: "h264", width: 64, height: 64, frames: 4 });
  addon = findBuild(addonCandidates()).path;
  await writeFile(join(dir, "child.mjs"), CHILD);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function child(mode: string, input: string): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, [join(dir, "child.mjs"), addon, mode, input], {
    maxBuffer: 1 << 20,
  });
  return JSON.parse(stdout.trim().split("\n").pop()!) as Record<string, unknown>;
}

describe("outputs past the largest ArrayBuffer", () => {
  it("hands a decode call's batch past 4 GiB out as one buffer per frame, without aborting", async () => {
    const t = video.track;
    const spec = await writeDecodeSpec(dir, "spec.json", video, { side: SIDE });
    // Before the fix the child died of SIGABRT ("double free") and execFile rejected.
    const out = await child("decode", spec);
    expect(out.total as number).toBeGreaterThan(FOUR_GIB);
    const frameBytes = SIDE * SIDE * 3 * 4;
    expect(out.frames).toEqual(Array.from(t.samples.pts, (pts) => ({ pts, length: frameBytes / 4, own: true })));
    expect(out.sameAsAlone).toBe(true);
    expect(out.inRange).toBe(true);
  }, 120_000);

  it("refuses a shared mapping past 4 GiB with ERR_INVALID_ARGUMENT", async () => {
    const slot = join(dir, "slot");
    await writeFile(slot, new Uint8Array(4096));
    expect(await child("map", slot)).toEqual({ code: "ERR_INVALID_ARGUMENT" });
  });
});
