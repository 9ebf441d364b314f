#!/usr/bin/env node
// The Python of the bench's peer rows (torchcodec, spdl): a virtual environment made from
// bench/requirements-peers.lock once per machine, under ${XDG_CACHE_HOME:-~/.cache}/ec/venv-<hash>,
// by the same code as the torch-2 test environment. The bench runs it when a row that needs it is
// asked for; run alone, it prints that Python's path, making the environment first if needed
// (minutes: torch's wheels from PyPI). Never part of CI.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { lockedPython } from "./locked-venv.mjs";
import { findVenvPython } from "./python-env.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const PEERS_LOCK = join(root, "bench", "requirements-peers.lock");
const PROBE = "import torch, fsspec, aiohttp, numpy";
/** torchcodec and spdl load FFmpeg's shared libraries at import: what they need of the system. */
const SYSTEM_PROBE = "import torchcodec.decoders, spdl.io; spdl.io.demux_config()";
/**
 * What Debian 12 calls FFmpeg 5.1's shared libraries, each a major torchcodec 0.17's
 * libtorchcodec_core5.so links (ldd); FFmpeg 4 to 9 all work (the wheel has a core per major).
 */
export const FFMPEG_APT_PACKAGES = [
  "libavutil57",
  "libavcodec59",
  "libavformat59",
  "libavdevice59",
  "libavfilter8",
  "libswscale6",
  "libswresample4",
];

function log(msg) {
  process.stderr.write(`[bench-peers-env] ${msg}\n`);
}

/** The failure's last line, and what to install when its output says FFmpeg's libraries did not load. */
export function explain(line, output = line) {
  return /lib(av|sw)[a-z]*\.so|FFmpeg|ffmpeg/.test(output)
    ? `${line} — torchcodec and spdl need FFmpeg's shared libraries (majors 4 to 9): on Debian 12 ` +
        `\`apt-get install -y ${FFMPEG_APT_PACKAGES.join(" ")}\`; elsewhere the distribution's FFmpeg ` +
        "libraries (e.g. Ubuntu 24.04's libavcodec60 and its siblings), or `conda install ffmpeg`"
    : line;
}

/** The environment's python, made first when missing; throws saying what to install when it cannot run. */
export function peersPython() {
  return lockedPython({
    lock: PEERS_LOCK,
    probe: PROBE,
    systemProbe: SYSTEM_PROBE,
    what: "import torchcodec and spdl",
    size: "about 5.4 GB",
    log,
    explain,
    // The environment brings its own torch: any Python that makes a venv will do.
    base: findVenvPython(),
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    process.stdout.write(`${peersPython()}\n`);
  } catch (err) {
    log(err instanceof Error ? err.message : String(err));
    process.exit(1);
  }
}
