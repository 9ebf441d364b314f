#!/usr/bin/env bash
# GPU check of the native loader, for a CUDA host (CI never needs one):
#   1. builds the addon with the CUDA backend,
#   2. checks NVDEC decode against `ffmpeg -hwaccel cuda` framemd5 (vitest + `ec decode`), the
#      GPU kernels (conversion/resize, label statistics) against their host twins, and a cuda
#      stream's labels against the CPU stream's,
#   3. reports which readInto mode device targets get (cufile or compat) and why,
#   4. compares NVDEC decode frames/s with ffmpeg's on the same device, and times the kernels.
# Where no GPU is, it says so and exits 0. Usage: test/gpu/check.sh [cuda:N]   (< 5 minutes)
set -euo pipefail
cd "$(dirname "$0")/../.."
DEVICE="${1:-cuda:0}"
say() { printf '\n== %s\n' "$*"; }

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP gpu check: no NVIDIA GPU or driver on this host (nvidia-smi finds none)"
  exit 0
fi
nvidia-smi -L

say "build (setup + native addon with CUDA)"
node scripts/setup.mjs
compiled=$(node -e 'import("./dist/native/index.js").then(m => console.log(m.devices().cuda.compiled))')
if [ "$compiled" != "true" ]; then
  if [ -z "$(node native/find-cuda.cjs)" ]; then
    echo "FAIL: no cuda.h under \$CUDA_HOME, \$CUDA_PATH or /usr/local/cuda; install the CUDA toolkit headers" >&2
    exit 1
  fi
  prefix=$(dirname "$(dirname "$(command -v node)")")
  (cd native && node ../node_modules/node-gyp/bin/node-gyp.js rebuild -j max --nodedir="$prefix")
fi
node -e 'import("./dist/native/index.js").then(m => console.log(JSON.stringify(m.devices(), null, 2)))'

if [ "$(node -e 'import("./dist/native/index.js").then(m => console.log(m.devices().cuda.kernels.compiled))')" != "true" ]; then
  echo "FAIL: the CUDA kernels were not built (no nvcc under \$CUDA_HOME/bin or /usr/local/cuda/bin?)" >&2
  exit 1
fi

say "NVDEC frames vs ffmpeg -hwaccel cuda framemd5; GPU kernels vs their host twins (vitest)"
npx vitest run test/native/gpu-decode.test.ts test/native/kernels.test.ts test/native/devices.test.ts \
  test/native/read-into.test.ts test/sdk/labels/pipeline.test.ts

say "ec decode --device $DEVICE --framemd5 vs ffmpeg -hwaccel cuda"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ffmpeg -v error -f lavfi -i testsrc2=size=1280x720:rate=30 -frames:v 90 -c:v libx264 -bf 3 -g 30 -pix_fmt yuv420p "$tmp/c.mp4"
node bin/ec.js decode "$tmp/c.mp4" --device "$DEVICE" --framemd5 | grep -v '^#' | awk -F', ' '{print $NF}' > "$tmp/ours.md5"
ffmpeg -v error -hwaccel cuda -hwaccel_device "${DEVICE#cuda:}" -i "$tmp/c.mp4" -map 0:v:0 -fps_mode passthrough -f framemd5 - | grep -v '^#' | awk -F', ' '{print $NF}' > "$tmp/ffmpeg.md5"
if diff -q "$tmp/ours.md5" "$tmp/ffmpeg.md5" >/dev/null; then
  echo "OK: $(wc -l < "$tmp/ours.md5") frames identical"
else
  echo "FAIL: NVDEC frames differ from ffmpeg -hwaccel cuda" >&2
  diff "$tmp/ours.md5" "$tmp/ffmpeg.md5" | head >&2
  exit 1
fi

say "cuFile mode for device targets"
node -e '
import("./dist/native/index.js").then(async (m) => {
  const d = m.devices();
  const fs = await import("node:fs");
  const file = process.argv[1] + "/c.mp4";
  const size = Math.min(fs.statSync(file).size, 1 << 20);
  const target = m.allocDevice(process.argv[2], size);
  const r = await m.readInto(file, 0, size, target);
  const same = Buffer.from(target.toHost()).equals(fs.readFileSync(file).subarray(0, size));
  console.log(`readInto mode: ${r.mode} (${r.bytesRead} bytes, byte-exact: ${same})` + (d.cufile.available ? "" : ` — cuFile unavailable: ${d.cufile.reason}`));
  if (!same) process.exit(1);
});' "$tmp" "$DEVICE"

say "Python client: CUDA tensors over CUDA IPC vs the CPU path"
if python3 -c "import torch, numpy; assert torch.cuda.is_available()" 2>/dev/null; then
  EC_ENGINE="$PWD/bin/ec.js" python3 python/tests/gpu_check.py "$tmp" --device "$DEVICE"
else
  echo "SKIP: python3 has no torch with CUDA"
fi

say "decode frames/s: ec on $DEVICE vs ffmpeg -hwaccel cuda"
npx tsc -p bench/tsconfig.json >/dev/null || true   # other benches' type errors must not block this one
node dist/bench/decode-gpu.js --device "$DEVICE" --frames 600 --rounds 3
echo
echo "gpu check passed"
