/** A cuda stream's labels against the CPU stream's, through open() on a local folder (as test/sdk/labels/pipeline.test.ts). */
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";

import { open } from "../../../sdk/index.js";
import { createLabelStage, type ClipLabels } from "../../../sdk/labels/index.js";
import type { Manifest, Outcome } from "./shared.js";

type ClipFlags = [start: number, valid: boolean, flags: string[]];

async function stream(dir: string, device: "cpu" | "cuda:0"): Promise<ClipFlags[]> {
  const stage = createLabelStage({ cache: false, filter: "tag" });
  const ds = await open(dir, { frames: 16, shuffle: false, device, workers: 1, size: [60, 80], ...stage.hooks });
  const clips: ClipFlags[] = [];
  for await (const b of ds) {
    for (const c of b.clips) {
      const labels = c.labels as ClipLabels;
      clips.push([c.start, labels.valid, [...labels.flags].sort()]);
    }
  }
  await ds.close();
  return clips.sort((a, b) => a[0] - b[0]);
}

/** The labels video is LABEL_MIX (test/sdk/labels/fixtures.ts): clean, black, frozen, a cut, clean. */
const EXPECTED: [number, string][] = [
  [16, "black"],
  [32, "frozen"],
  [48, "scene-cut"],
];

export async function labelChecks(manifest: Manifest, bundle: string, gpuSkip: string | null): Promise<Outcome[]> {
  const dir = join(bundle, "videos", manifest.labels.dir);
  const cpu = await stream(dir, "cpu");
  const missing = EXPECTED.filter(([start, flag]) => !cpu.find((c) => c[0] === start)?.[2].includes(flag));
  const outcomes: Outcome[] = [
    {
      status: cpu.length === 5 && missing.length === 0 ? "pass" : "fail",
      detail: `cpu stream: ${cpu.length} clips, ${cpu.map((c) => `@${c[0]}:${c[2].join("+") || "clean"}`).join(" ")}${missing.length ? `; missing ${missing.map(([s, f]) => `${f}@${s}`).join(", ")}` : ""}`,
      data: cpu,
    },
  ];
  if (gpuSkip) return [...outcomes, { status: "skip", detail: `cuda stream: ${gpuSkip}` }];
  const gpu = await stream(dir, "cuda:0");
  const same = isDeepStrictEqual(gpu, cpu);
  outcomes.push({
    status: same ? "pass" : "fail",
    detail: `cuda stream: ${gpu.length} clips, flags ${same ? "equal to" : "differ from"} the cpu stream's`,
    data: gpu,
  });
  return outcomes;
}
