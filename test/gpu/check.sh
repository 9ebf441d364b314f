#!/usr/bin/env bash
# GPU check from a checkout on a CUDA host (CI never needs one). It builds gpu-bundle/
# (`npm run gpu:bundle`: the self-contained addon with the CUDA backend and kernels, Node, the
# test videos and their reference md5s) and runs the same gpu-bundle/run.sh that a bare GPU host
# runs: devices(), NVDEC framemd5 equality (H.264 B-frames, HEVC 8/10-bit, VP9, AV1 or its CPU
# fallback), the kernels against their host twins, a cuda stream's labels against the CPU
# stream's, the decode benchmark. Where this host also has an ffmpeg with CUDA, the vitest GPU
# tests compare NVDEC with `ffmpeg -hwaccel cuda` as well. Where no GPU is, it says so and exits 0.
# Usage: test/gpu/check.sh   (report and log under $OUT, else gpu-bundle/out)
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP gpu check: no NVIDIA GPU or driver on this host (nvidia-smi finds none)"
  exit 0
fi
nvidia-smi -L
node scripts/gpu-bundle.mjs
bash gpu-bundle/run.sh

if ffmpeg -hide_banner -hwaccels 2>/dev/null | grep -qx cuda; then
  node scripts/setup.mjs
  EC_NATIVE_PATH=native/prebuilds/linux-x64/ec_native.node npx vitest run --project node \
    test/native/gpu-decode.test.ts test/native/kernels.test.ts test/native/devices.test.ts \
    test/native/read-into.test.ts test/sdk/labels/pipeline.test.ts
fi
echo
echo "gpu check passed"
