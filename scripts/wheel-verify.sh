#!/usr/bin/env bash
# Installs the Python wheel in a bare Debian root, as on a GPU host that has python3 and pip but
# neither Node, ffmpeg nor libav*: debootstrap --variant=minbase bookworm with only python3-pip
# and python3-venv added, made once per machine under ${XDG_CACHE_HOME:-$HOME/.cache}/ec, then
# chroot: a virtual environment, `pip install --no-index` of the wheel from a wheelhouse of its
# pinned dependencies (scripts/wheelhouse.mjs), and python/tests/wheel_check.py (the three lines
# on a folder and on an s3:// bucket served on this machine's loopback, `ec --help`,
# `ec stream DIR --json`). Needs root. Usage: npm run wheel:verify [-- --if-changed]
#   --if-changed (.ci/run): does nothing when these inputs already passed on this machine, or
#   when not root.
set -euo pipefail
root_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/ec
bare=$cache/bookworm-python
say() { printf '[wheel-verify] %s\n' "$*" >&2; }
# shellcheck source=scripts/bare-root.sh
source "$root_dir/scripts/bare-root.sh"

require_root "${1:-}"
# What goes into the wheel and its check. A stamp per hash of them records a pass on this machine.
watched=(python native common sdk origin-cache bin/bundle-runner.cjs scripts/bundle-engine.mjs scripts/prebuild.mjs
  scripts/prebuilt.mjs scripts/wheel.mjs scripts/wheelhouse.mjs scripts/wheel-verify.sh scripts/bare-root.sh
  test/helpers/s3-server.ts package-lock.json)
inputs=$(cd "$root_dir" && git ls-files -s "${watched[@]}" | sha256sum | cut -c1-16)
stamp=$cache/wheel-verified/$inputs
if [[ ${1:-} == --if-changed && -f $stamp && -z $(cd "$root_dir" && git status --porcelain -- "${watched[@]}") ]]; then
  say "the wheel's inputs ($inputs) already passed in a bare root on this machine; skipped"
  exit 0
fi
start=$SECONDS

bare_root "$bare" python3-pip,python3-venv
# The last run's venv and files go first: the root is checked as debootstrap made it.
work=$bare/verify
rm -rf "$work"
# What makes this root bare: none of these may be there.
for tool in node nodejs npm ffmpeg ffprobe nvidia-smi; do
  if chroot "$bare" /bin/bash -c "command -v $tool" >/dev/null 2>&1; then
    say "Expected no $tool in the bare root but $bare has one"
    exit 1
  fi
done
if find "$bare" -xdev \( -name 'libavcodec*' -o -name 'libavformat*' -o -name 'libswscale*' -o -name 'libcuda*' -o -name 'libnode*' \) | grep -q .; then
  say "Expected no libav*, libnode or libcuda in the bare root but found some"
  exit 1
fi

# The wheel and what it pulls in, for the root's Python.
version=$(chroot "$bare" /usr/bin/python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
wheel=$(node "$root_dir/scripts/wheel.mjs" --out "$root_dir/.ec/wheel-verify")
house=$(node "$root_dir/scripts/wheelhouse.mjs" --python-version "$version")
mkdir -p "$work/wheelhouse" "$work/videos"
cp "$wheel" "$work/"
cp "$house"/*.whl "$work/wheelhouse/"
cp "$root_dir/python/tests/wheel_check.py" "$work/"
# Videos made here (the root has no ffmpeg): H.264 with B-frames, GOPs of 12, two sizes.
for spec in a:testsrc2:160x96 b:mandelbrot:160x96 c:testsrc2:128x80; do
  IFS=: read -r name src size <<<"$spec"
  ffmpeg -hide_banner -loglevel error -y -f lavfi -i "$src=size=$size:rate=25" -frames:v 48 -c:v libx264 \
    -preset ultrafast -bf 2 -g 12 -keyint_min 12 -sc_threshold 0 -pix_fmt yuv420p "$work/videos/$name.mp4"
done

# The S3 server on this machine's loopback, which the chroot shares; it stops when its stdin closes.
coproc S3 { exec node "$root_dir/python/tests/s3_server.mjs" "$root_dir" 2>/dev/null; }
s3_in=${S3[1]}
read -r s3 <&"${S3[0]}"
mkdir -p "$bare/proc"
mounted=
if mount -t proc proc "$bare/proc" 2>/dev/null; then mounted=1; fi
trap '[[ -n $mounted ]] && umount "$bare/proc"; exec {s3_in}>&-; true' EXIT
status=0
chroot "$bare" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8 S3="$s3" /bin/bash -c '
  set -euo pipefail
  python3 -m venv /verify/venv
  /verify/venv/bin/pip install --quiet --no-index --find-links /verify/wheelhouse /verify/ec-*.whl
  PATH=/verify/venv/bin:$PATH /verify/venv/bin/python /verify/wheel_check.py /verify/videos "$S3" >/verify/report.json
' || status=$?
if [[ $status -ne 0 ]]; then
  say "the wheel's check exited $status in the bare root ($bare)"
  exit 1
fi
node -e '
const r = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8"));
const clips = (bs) => bs.reduce((n, b) => n + b.keys.length, 0);
console.error(`[wheel-verify] bare root: ${clips(r.local)} clips from a folder, ${clips(r.s3)} from s3://, ec stream ${r.stream.clips}; engine ${r.engine.join(" ")}`);
' "$work/report.json"
say "passed in $((SECONDS - start)) s"
mkdir -p "$(dirname "$stamp")"
touch "$stamp"
