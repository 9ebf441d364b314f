#!/usr/bin/env bash
# The GPU check, run on the GPU host with nothing else: bash gpu-bundle/run.sh
# Unpacks the bundle's Node, then check.mjs reports devices(), NVDEC framemd5 equality per
# video, the kernels against their host twins, a cuda stream's labels against the CPU
# stream's, python_check.py when the bundle has one, and the decode benchmark. Writes
# gpu-report.json and gpu-bundle.log under $OUT (else gpu-bundle/out); exits 1 on any failed
# check. Where no GPU is, the GPU checks skip with the reason and the CPU checks still run.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${OUT:-$here/out}
mkdir -p "$out"
log=$out/gpu-bundle.log
: >"$log"
start=$(date +%s)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
say() { printf '%s\n' "$*" | tee -a "$log"; }

# xz: the host's, else the one the bundle carries (needs only liblzma.so.5, which every Debian
# and Ubuntu has: dpkg links it), else python3's lzma.
unxz() {
  if command -v xz >/dev/null; then
    xz -dc "$1" >"$2"
  elif "$here/bin/xz" -dc "$1" >"$2" 2>/dev/null; then
    :
  elif command -v python3 >/dev/null; then
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"
  else
    say "FAIL: no xz, no liblzma.so.5 for the carried xz and no python3 here to unpack $1"
    exit 1
  fi
}
unxz "$here/node.xz" "$tmp/node"
unxz "$here/ec_native.node.xz" "$tmp/ec_native.node"
chmod +x "$tmp/node"
say "node $("$tmp/node" --version) and the addon unpacked in $(($(date +%s) - start)) s"

export EC_NATIVE_PATH=$tmp/ec_native.node
export UV_THREADPOOL_SIZE=${UV_THREADPOOL_SIZE:-16}
"$tmp/node" "$here/check.mjs" --bundle "$here" --out "$out" 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
say "run.sh: exit $rc after $(($(date +%s) - start)) s; report $out/gpu-report.json, log $log"
exit "$rc"
