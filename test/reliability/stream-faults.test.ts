/**
 * Upstream faults under a full SDK stream: local edge → WAN emulator (TLS + HTTP/2) →
 * origin-cache → open(). For each fault mode the stream ends normally, every delivered frame is
 * md5-equal to ffmpeg's, and whatever is not delivered is a typed error naming its object.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, getGlobalDispatcher, setGlobalDispatcher, type Dispatcher } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCache } from "../../origin-cache/index.js";
import { open, type SdkError } from "../../sdk/index.js";
import { freePort } from "../../sdk/dev/free-port.js";
import { startWanEmulator, type FaultRule, type WanEmulator } from "../helpers/wan-emulator.js";
import { bytesOf, FAULT_READ, report, scale, startStack, type Stack } from "./stack.js";
import { expectFramesMatch } from "../helpers/ffmpeg-md5.js";

let stack: Stack;
let wan: WanEmulator;
let previous: Dispatcher;
const copies = scale(2, 6);
const keyVideo = new Map<string, string>();
let baselineClips = 0;
const objectsOnly = (path: string, range: string | undefined): boolean =>
  path.startsWith("/v1/objects/") && range !== undefined && range !== "bytes=0-0";

beforeAll(async () => {
  const port = await freePort();
  wan = await startWanEmulator({ target: `http://127.0.0.1:${port}`, rttMs: 5 });
  // The SDK reads manifests and indexes straight from the emulator's self-signed TLS.
  previous = getGlobalDispatcher();
  setGlobalDispatcher(new Agent({ connect: { ca: wan.ca } }));
  stack = await startStack(undefined, { port, publicOrigin: wan.url });
  for (const name of stack.videos.keys()) {
    const body = await bytesOf(stack.videos.get(name)!);
    for (let i = 0; i < copies; i++) {
      const key = `wf/${name}-${i}.mp4`;
      keyVideo.set(key, name);
      expect(await stack.put(key, body)).toBe(201);
    }
  }
}, 300_000);

afterAll(async () => {
  await stack?.close();
  await wan?.close();
  if (previous) setGlobalDispatcher(previous);
});

/** One epoch through a fresh cache, `during` run after the first batch; frames checked against ffmpeg. */
async function epoch(during: () => unknown): Promise<{ clips: number; frames: number; errors: SdkError[] }> {
  const dir = await mkdtemp(join(tmpdir(), "ec-rel-wf-"));
  const svc = await startCache({
    upstreams: [wan.url],
    tls: { ca: wan.ca },
    dir,
    maxBytes: 64 << 20,
    blockSize: 64 << 10,
    retries: 4,
    retryMinDelayMs: 10,
    retryMaxDelayMs: 100,
    bodyTimeoutMs: 1500,
    headersTimeoutMs: 5000,
    logLevel: "silent",
  });
  const errors: SdkError[] = [];
  let clips = 0;
  let frames = 0;
  try {
    const ds = await open(`${wan.url}/v1/datasets/wf`, {
      token: stack.edge.token,
      cache: svc.url,
      ...FAULT_READ,
      onError: (e) => errors.push(e),
    });
    let first = true;
    try {
      for await (const b of ds) {
        frames += expectFramesMatch(b, (key) => stack.md5s.get(keyVideo.get(key)!)!);
        clips += b.clips.length;
        if (first) {
          first = false;
          await during();
        }
      }
    } finally {
      await ds.close();
    }
  } finally {
    wan.clearFaults();
    await svc.close();
    await rm(dir, { recursive: true, force: true });
  }
  return { clips, frames, errors };
}

describe("WAN faults under a full stream: exact frames or a typed error per object, and the stream goes on", () => {
  let baseline: { clips: number; frames: number };

  beforeAll(async () => {
    const b = await epoch(() => {});
    expect(b.errors).toEqual([]);
    baseline = b;
    baselineClips = b.clips;
  }, 300_000);

  const faults: [string, FaultRule["fault"], number][] = [
    ["connection resets mid-body", { kind: "reset", afterBytes: 3000, scope: "connection" }, 3],
    ["stream resets mid-body", { kind: "reset", afterBytes: 1000 }, 4],
    ["a 503 burst", { kind: "503" }, 3],
    ["stalls", { kind: "stall", afterBytes: 2000, ms: 2500 }, 2],
    ["short bodies", { kind: "short", afterBytes: 1500 }, 4],
  ];
  for (const [what, fault, times] of faults) {
    it(what, async () => {
      const r = await epoch(() => wan.inject({ fault, times, match: objectsOnly }));
      for (const e of r.errors) expect(e.code, e.message).toMatch(/^ERR_[A-Z_]+$/);
      // Retries absorb these bursts: nothing is lost.
      expect(r.errors.map((e) => e.code)).toEqual([]);
      expect(r.clips).toBe(baseline.clips);
      report(`wan-fault ${what}`, { times, clips: r.clips, frames_exact: r.frames, errors: r.errors.length });
    });
  }
});

describe("the edge restarted mid-stream", () => {
  it("a 1.5 s outage costs nothing: the reads wait for the edge and every frame is exact", async () => {
    // Not awaited inside the epoch: the stream goes on reading while the edge is down.
    let restart: Promise<void> | undefined;
    let atStop = 0;
    let atStart = 0;
    const r = await epoch(() => {
      atStop = wan.stats.requests;
      restart = stack.restartEdge(1500).then(() => {
        atStart = wan.stats.requests;
      });
    });
    await restart;
    // The outage was felt: the stream asked the edge while it was down (the cache's own retries
    // give up well within it), and the SDK's reads waited it out: nothing lost.
    expect(atStart - atStop).toBeGreaterThan(0);
    for (const e of r.errors) expect(e.code, e.message).toMatch(/^ERR_[A-Z_]+$/);
    expect(r.errors.map((e) => e.code)).toEqual([]);
    expect(r.clips).toBeGreaterThanOrEqual(Math.max(1, baselineClips));
    report("edge-restart", {
      clips: r.clips,
      frames_exact: r.frames,
      typed_errors: r.errors.length,
      requests_while_down: atStart - atStop,
      codes: [...new Set(r.errors.map((e) => e.code))],
    });
  }, 300_000);
});

// Last: the emulator keeps reporting the new ETags from here on.
describe("an object replaced mid-epoch", () => {
  it("an object replaced mid-epoch (ETag change): typed errors for what changed, exact frames for the rest", async () => {
    const r = await epoch(() => wan.changeEtags());
    // Each clip either delivered exact or reported once, as the change it is, naming its object.
    for (const e of r.errors) {
      expect(e.code, e.message).toBe("ERR_ETAG_CHANGED");
      expect(e.message).toMatch(/wf\//);
    }
    expect(r.errors.length).toBeGreaterThan(0);
    expect(r.clips + r.errors.length).toBe(baselineClips);
    report("wan-fault etag change", {
      clips: r.clips,
      of: baselineClips,
      frames_exact: r.frames,
      typed_errors: r.errors.length,
      codes: [...new Set(r.errors.map((e) => e.code))],
    });
  });
});
