import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { main as labelsCli } from "../../../sdk/cli/labels.js";
import { startLocalEdge, type LocalEdge } from "../../../sdk/dev/index.js";
import { open } from "../../../sdk/index.js";
import { createLabelStage, EdgeLabelCache, type ClipLabels, type LabelSummary } from "../../../sdk/labels/index.js";
import { makeSegments } from "./fixtures.js";
import { uploadFiles } from "../../helpers/edge-upload.js";

let dir: string;
let edge: LocalEdge;
let dataset: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-labels-edge-"));
  const started = startLocalEdge({ port: 0, quiet: true, varsDir: dir, persistDir: join(dir, "r2") });
  const file = await makeSegments(dir, "mix.mp4", [
    { kind: "testsrc", frames: 16 },
    { kind: "black", frames: 16 },
    { kind: "still", frames: 16 },
    { kind: "mandelbrot", frames: 16 },
  ]);
  edge = await started;
  dataset = `${edge.url}/v1/datasets/lab`;
  await uploadFiles(edge, [["lab/mix.mp4", file]]);
}, 180_000);

afterAll(async () => {
  await edge?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function epoch(): Promise<{ stage: ReturnType<typeof createLabelStage>; seen: string[] }> {
  const stage = createLabelStage({ cache: new EdgeLabelCache({ edge: dataset, token: edge.token }), filter: "tag" });
  const ds = await open(dataset, {
    token: edge.token,
    device: "cpu",
    frames: 16,
    shuffle: false,
    workers: 1,
    ...stage.hooks,
  });
  const seen: string[] = [];
  for await (const b of ds)
    for (const c of b.clips) seen.push(`${c.start}:${(c.labels as ClipLabels).flags.join("+")}`);
  await ds.close();
  await stage.flush();
  return { stage, seen };
}

describe("labels against a local edge", () => {
  test("sidecars written through /v1/labels serve the next epoch: nothing is labeled twice", async () => {
    const first = await epoch();
    expect(first.stage.counts).toEqual({ labeled: 4, cached: 0 });
    expect(first.seen).toEqual(["0:", "16:black+low-motion", "32:frozen+low-motion", "48:"]);
    const second = await epoch();
    expect(second.stage.counts).toEqual({ labeled: 0, cached: 4 });
    expect(second.seen).toEqual(first.seen);
  });

  test("ec labels summarizes the edge dataset", async () => {
    let out = "";
    const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
      out += String(chunk);
      return true;
    });
    const err = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    let code: number;
    try {
      code = await labelsCli([dataset, "--token", edge.token, "--json", "--device", "cpu", "--workers", "1"]);
    } finally {
      spy.mockRestore();
      err.mockRestore();
    }
    expect(code).toBe(0);
    const s = JSON.parse(out) as LabelSummary;
    expect({ clips: s.clips, valid: s.valid, invalid: s.invalid }).toEqual({ clips: 4, valid: 2, invalid: 2 });
    expect(s.worst.map((w) => w.key)).toEqual(["lab/mix.mp4"]);
  });
});
