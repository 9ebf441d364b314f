/**
 * The peers labs pick instead of ec, as a user writes them, each a small Python script under the
 * bench's peers environment (scripts/bench-peers-env.mjs: torch, torchcodec, fsspec, spdl from
 * bench/requirements-peers.lock, made the first time one of these rows is asked for):
 *
 * - torchcodec_local: bench/torchcodec_loader.py over the local files, clips in the local row's
 *   (random) order: a map-style Dataset, `get_frames_at`, one decoder per video, exact seek mode.
 * - torchcodec_local_sequential: the same clips sorted by file and first frame, decoded in the
 *   loader's own process (DataLoader num_workers=0): its best case, each decoder reading on
 *   without seeking back and no frame crossing to another process, so its CPU per frame is
 *   libavcodec + swscale's and little else (the limit ec's CPU per frame is held to).
 * - torchcodec_remote: the same script on the signed URLs through the WAN emulator, each opened
 *   as a file-like object from fsspec's HTTP file system, random order; the bytes are what the
 *   emulator sent, as for ec's rows.
 * - spdl: bench/spdl_loader.py over the local files, random order.
 */
import { spawnSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { RowName } from "../args.js";
import { ROW_TIMEOUT_MS, urlFor, type RowContext, type RowDef, type RowOutcome } from "../row.js";
import type { ClipRef } from "../row-result.js";
import { runChild } from "../run-child.js";

let peers: { python: string } | { reason: string } | undefined;

/** The peers environment's python (made once per machine), or why it cannot run. */
function peersPython(root: string): { python: string } | { reason: string } {
  if (peers) return peers;
  const r = spawnSync(process.execPath, [join(root, "scripts", "bench-peers-env.mjs")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    maxBuffer: 1 << 24,
  });
  process.stderr.write(r.stderr ?? "");
  const python = r.stdout?.trim().split("\n").at(-1);
  peers =
    r.status === 0 && python
      ? { python }
      : {
          reason: `the bench's peers environment is not usable: ${(r.stderr ?? "").trim().split("\n").at(-1) ?? `exit ${r.status}`}`,
        };
  return peers;
}

/** The clips sorted by object and first frame: the order a reader that goes through each file once takes. */
export function fileOrder(clips: readonly ClipRef[]): ClipRef[] {
  return [...clips].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.start - b.start));
}

interface PeerRun {
  readonly script: string;
  readonly remote: boolean;
  readonly sequential: boolean;
  /** Decode in the loader's process (num_workers=0) instead of one worker per client core. */
  readonly inProcess?: boolean;
}

async function runPeer(ctx: RowContext, name: RowName, p: PeerRun): Promise<RowOutcome> {
  const bed = ctx.testbed;
  if (p.remote && !bed) return { kind: "skipped", reason: "the local edge did not start (see the message above)" };
  const env = peersPython(ctx.root);
  if ("reason" in env) return { kind: "skipped", reason: env.reason };
  const clips = p.sequential ? fileOrder(ctx.clips) : ctx.clips;
  // The local row's clip keys are paths below the dataset: the file's name in the local folder.
  const src = (clip: ClipRef): string => (p.remote ? urlFor(bed!, clip.key) : join(ctx.localDir, clip.key));
  const file = join(ctx.workDir, `${name}-clips.json`);
  await writeFile(file, JSON.stringify(clips.map((clip) => ({ src: src(clip), clip }))));
  const c = ctx.config;
  const m = await runChild({
    command: env.python,
    args: [
      join(ctx.root, "bench", p.script),
      file,
      ...[
        "--workers",
        p.inProcess ? "0" : String(c.workers),
        "--batch",
        String(c.batch),
        "--step-ms",
        String(c.stepMs),
      ],
      ...(c.resize ? ["--size", `${c.resize[0]}x${c.resize[1]}`] : []),
    ],
    // aiohttp (fsspec's HTTP client) verifies the emulator's self-signed certificate against this file.
    env: p.remote ? { SSL_CERT_FILE: bed!.caFile } : {},
    ...(p.remote ? { wanBytes: () => bed!.wan.stats.bytesSent, wanRequests: () => bed!.wan.stats.requests } : {}),
    timeoutMs: ROW_TIMEOUT_MS,
    cpus: c.cpus,
  });
  return { kind: "ran", ...m };
}

const peerRow = (name: RowName, label: string, p: PeerRun, slow: boolean): RowDef => ({
  name,
  label,
  slow,
  run: (ctx) => runPeer(ctx, name, p),
});

// Random order decodes from the keyframe on for each clip: at long GOPs a few clips a second, so
// these decode the first --slow-clips clips, against local runs of those same clips.
export const torchcodecLocalRow = peerRow(
  "torchcodec_local",
  "torchcodec local, random order",
  { script: "torchcodec_loader.py", remote: false, sequential: false },
  true,
);
export const torchcodecLocalSequentialRow = peerRow(
  "torchcodec_local_sequential",
  "torchcodec local, file order",
  { script: "torchcodec_loader.py", remote: false, sequential: true, inProcess: true },
  false,
);
export const torchcodecRemoteRow = peerRow(
  "torchcodec_remote",
  "torchcodec remote (fsspec HTTP), random",
  { script: "torchcodec_loader.py", remote: true, sequential: false },
  true,
);
export const spdlRow = peerRow(
  "spdl",
  "SPDL local, random order",
  { script: "spdl_loader.py", remote: false, sequential: false },
  true,
);
