#!/usr/bin/env bash
# Runs gpu-bundle/run.sh in a bare Debian root, as on a GPU host that has neither Node, ffmpeg
# nor libav* (and here no GPU either): debootstrap --variant=minbase bookworm from this
# machine's Debian mirror, made once per machine under ${XDG_CACHE_HOME:-$HOME/.cache}/ec, then
# chroot. Passes when the bundle's CPU checks all pass and each GPU check skips saying why.
# Needs root. Usage: npm run gpu:bundle:verify [-- --if-changed]
#   builds gpu-bundle/ first (EC_GPU_BUNDLE=DIR verifies that bundle as it is instead);
#   --if-changed (.ci/run): does nothing when these inputs already passed on this machine, or
#   when not root.
set -euo pipefail
root_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/ec
bare=$cache/bookworm-minbase
say() { printf '[verify] %s\n' "$*" >&2; }
# shellcheck source=scripts/bare-root.sh
source "$root_dir/scripts/bare-root.sh"

require_root "${1:-}"
# What goes into the bundle: the native sources and build scripts, the bundled TypeScript and
# the lock file. A stamp per hash of them records a pass on this machine.
inputs=$(cd "$root_dir" && git ls-files -s native common sdk test/gpu test/helpers test/sdk/labels/fixtures.ts \
  bench/decode-fixtures.ts scripts/gpu-bundle.mjs scripts/gpu-bundle-verify.sh scripts/prebuild.mjs scripts/prebuilt.mjs scripts/bare-root.sh package-lock.json |
  sha256sum | cut -c1-16)
stamp=$cache/gpu-bundle-verified/$inputs
if [[ ${1:-} == --if-changed && -f $stamp && -z $(cd "$root_dir" && git status --porcelain -- native common sdk test/gpu scripts) ]]; then
  say "the bundle's inputs ($inputs) already passed in a bare root on this machine; skipped"
  exit 0
fi
if [[ -n ${EC_GPU_BUNDLE:-} ]]; then
  bundle=$EC_GPU_BUNDLE
else
  bundle=$root_dir/gpu-bundle
  node "$root_dir/scripts/gpu-bundle.mjs" --out "$bundle"
fi

bare_root "$bare"

# What makes this root bare: none of these may be there.
for tool in node ffmpeg ffprobe python3 nvidia-smi; do
  if chroot "$bare" /bin/bash -c "command -v $tool" >/dev/null 2>&1; then
    say "Expected no $tool in the bare root but $bare has one"
    exit 1
  fi
done
if find "$bare" -xdev \( -name 'libavcodec*' -o -name 'libswscale*' -o -name 'libcuda*' \) | grep -q .; then
  say "Expected no libav* or libcuda in the bare root but found some"
  exit 1
fi

rm -rf "$bare/gpu-bundle" "$bare/out"
cp -a "$bundle" "$bare/gpu-bundle"
rm -rf "$bare/gpu-bundle/out"
mkdir -p "$bare/out" "$bare/proc"
mounted=
if mount -t proc proc "$bare/proc" 2>/dev/null; then mounted=1; fi
trap '[[ -n $mounted ]] && umount "$bare/proc"; true' EXIT
status=0
chroot "$bare" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root OUT=/out /bin/bash /gpu-bundle/run.sh || status=$?
out=${OUT:-$root_dir/.ec/gpu-bundle-verify}
mkdir -p "$out"
cp "$bare/out/gpu-report.json" "$bare/out/gpu-bundle.log" "$out/" 2>/dev/null || true
if [[ $status -ne 0 ]]; then
  say "run.sh exited $status in the bare root; see $out/gpu-bundle.log"
  exit 1
fi
# Every GPU check must have skipped for want of a GPU, and nothing else skipped or failed.
node -e '
const r = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8"));
const bad = r.results.filter((c) => c.status === "fail" || (c.status === "skip" && !/^(cuda stream: |nvdec: )?no GPU: |carries no python_check|no python3 on this host/.test(c.detail)));
for (const c of bad) console.error(`[verify] ${c.status} ${c.name}: ${c.detail}`);
const cpu = r.results.filter((c) => c.status === "pass").length;
console.error(`[verify] bare root: ${cpu} CPU checks passed, ${r.skipped} GPU checks skipped (no GPU), ${r.failed} failed`);
process.exit(bad.length > 0 || r.passed === 0 ? 1 : 0);
' "$out/gpu-report.json"
mkdir -p "$(dirname "$stamp")"
touch "$stamp"
