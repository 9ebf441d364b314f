/**
 * Real process faults under a running stream: the origin-cache (`ec cache` as a child) killed
 * with SIGKILL and restarted on the same port and directory, and the local edge stopped and
 * started again on its port. The stream completes and every delivered frame is exact.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { open, type SdkError } from "../../sdk/index.js";
import { freePort } from "../../sdk/dev/free-port.js";
import { cleanEnv, ecSpawn, ensureBuilt, firstLine } from "../helpers/ec-process.js";
import { bytesOf, FAULT_READ, report, scale, startStack, type Stack } from "./stack.js";
import { expectFramesMatch } from "../helpers/ffmpeg-md5.js";

let stack: Stack;
const copies = scale(3, 12);
const keyVideo = new Map<string, string>();

beforeAll(async () => {
  const built = ensureBuilt();
  stack = await startStack();
  for (const name of stack.videos.keys()) {
    const body = await bytesOf(stack.videos.get(name)!);
    for (let i = 0; i < copies; i++) {
      const key = `pf/${name}-${i}.mp4`;
      keyVideo.set(key, name);
      expect(await stack.put(key, body)).toBe(201);
    }
  }
  await built;
}, 300_000);

afterAll(async () => {
  await stack?.close();
});

function startCacheChild(port: number, dir: string): { child: ChildProcess; up: Promise<string> } {
  const child = ecSpawn(
    [
      "cache",
      "--upstream",
      stack.edge.url,
      "--dir",
      dir,
      "--max-bytes",
      "64M",
      "--block-size",
      "64K",
      "--listen",
      `127.0.0.1:${port}`,
      "--json",
    ],
    cleanEnv(),
  );
  return { child, up: firstLine(child) };
}

function exited(child: ChildProcess): Promise<unknown> {
  return child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((r) => child.once("exit", r));
}

/** Streams the dataset, calling `fault` once after the first batch; checks every frame against ffmpeg. */
async function streamChecked(
  cache: string | undefined,
  fault: () => Promise<void>,
): Promise<{ frames: number; clips: number; errors: SdkError[] }> {
  const errors: SdkError[] = [];
  const ds = await open(`${stack.edge.url}/v1/datasets/pf`, {
    token: stack.edge.token,
    ...(cache ? { cache } : {}),
    ...FAULT_READ,
    onError: (e) => errors.push(e),
  });
  let frames = 0;
  let clips = 0;
  let faulted = false;
  try {
    for await (const b of ds) {
      frames += expectFramesMatch(b, (key) => stack.md5s.get(keyVideo.get(key)!)!);
      clips += b.clips.length;
      if (!faulted) {
        faulted = true;
        await fault();
      }
    }
  } finally {
    await ds.close();
  }
  return { frames, clips, errors };
}

describe("process faults during a stream", () => {
  it("kill -9 of the origin-cache, then a restart on the same port and dir: the stream completes, every frame exact", async () => {
    const dir = await mkdtemp(join(tmpdir(), "ec-rel-kill-"));
    const port = await freePort();
    let current = startCacheChild(port, dir);
    try {
      const up = JSON.parse(await current.up) as { cache: string };
      const baseline = await streamChecked(up.cache, async () => {});
      const result = await streamChecked(up.cache, async () => {
        current.child.kill("SIGKILL");
        await exited(current.child);
        // The SDK finds nobody listening for a while before the new process binds the port.
        await sleep(300);
        current = startCacheChild(port, dir);
        await current.up;
      });
      expect(result.errors.map((e) => e.code)).toEqual([]);
      expect(result.clips).toBe(baseline.clips);
      expect(result.frames).toBe(baseline.frames);
      report("cache-kill-9", {
        clips: result.clips,
        frames: result.frames,
        framesExact: result.frames,
        errors: result.errors.length,
      });
    } finally {
      current.child.kill("SIGKILL");
      await exited(current.child);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
