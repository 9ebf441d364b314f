/** What the bundle's checks share: the manifest written by scripts/gpu-bundle.mjs, results, fixtures. */
import { readFileSync } from "node:fs";

import { buildIndex, bytesReader } from "../../../common/media-index/index.js";
import type { VideoTrackV1 } from "../../../common/schema/index.js";
import type { HostDevices } from "../../../native/index.js";

/** The frame layout NVDEC writes: 8-bit streams as nv12, 10-bit as p010le. */
export type Layout = "nv12" | "p010le";

export interface VideoEntry {
  name: string;
  file: string;
  codec: string;
  layout: Layout;
  frames: number;
  /** framemd5 of every frame in NV12 / P010 layout (what NVDEC writes), made where the bundle was built. */
  md5: string[];
}

export interface Manifest {
  builtAt: string;
  videos: VideoEntry[];
  bench: { file: string; codec: string; frames: number };
  labels: { dir: string };
}

export type Status = "pass" | "fail" | "skip";
export interface CheckResult {
  name: string;
  status: Status;
  detail: string;
  data?: unknown;
}

export type Outcome = Omit<CheckResult, "name">;

export async function indexed(file: string): Promise<{ track: VideoTrackV1; bytes: Uint8Array }> {
  const bytes = new Uint8Array(readFileSync(file));
  const index = await buildIndex(bytesReader(bytes), { key: file, etag: "bundle" });
  if (!index.video) throw new Error(`${file}: ${index.error?.message ?? "no video track"}`);
  return { track: index.video, bytes };
}

/** Why GPU checks skip here, or null where NVDEC is usable. */
export function noGpu(d: HostDevices): string | null {
  if (!d.cuda.compiled) return "this addon was built without CUDA";
  if (!d.cuda.available) return `no GPU: ${d.cuda.reason ?? "no CUDA device"}`;
  if (!d.cuda.nvdec.available) return `no NVDEC: ${d.cuda.nvdec.reason ?? "none"}`;
  return null;
}
