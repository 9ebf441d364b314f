#!/usr/bin/env bash
# Builds the minimal FFmpeg the addon links statically: FFmpeg 5.1.9 and dav1d 1.0.0 from
# Debian bookworm's own source packages (pinned below), static PIC libraries, LGPL only,
# decoders only (h264 hevc vp8 vp9 av1 via libdav1d + the native av1 for NVDEC, mjpeg png webp),
# swscale, the NVDEC hwaccels through nv-codec-headers, no encoders, no network, nothing
# autodetected. The result is cached outside the clone, keyed by a hash of this file, so a
# machine builds it once:  ${XDG_CACHE_HOME:-$HOME/.cache}/ec/ffmpeg-5.1.9-<hash>
#
# Usage: native/ffmpeg/build.sh            build when missing, print the prefix on stdout
#        native/ffmpeg/build.sh --prefix   print the prefix only (built or not)
# EC_FFMPEG_PREFIX overrides the prefix. Needs root (apt-get) unless the build
# dependencies and the deb-src entry are already there.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

FFMPEG_VERSION=7:5.1.9-0+deb12u1
DAV1D_VERSION=1.0.0-2+deb12u1
BUILD_DEPS=(build-essential pkg-config nasm meson ninja-build dpkg-dev zlib1g-dev libffmpeg-nvenc-dev)
DECODERS=h264,hevc,vp8,vp9,av1,libdav1d,mjpeg,png,webp
HWACCELS=h264_nvdec,hevc_nvdec,vp9_nvdec,av1_nvdec

hash=$(sha256sum "$here/build.sh" | cut -c1-12)
prefix=${EC_FFMPEG_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/ec/ffmpeg-5.1.9-$hash}
if [[ ${1:-} == --prefix ]]; then
  echo "$prefix"
  exit 0
fi
if [[ -f $prefix/.complete ]]; then
  echo "$prefix"
  exit 0
fi
# One build at a time per prefix (several clones may ask at once); the others wait for it.
mkdir -p "$(dirname "$prefix")"
exec 9>"$prefix.lock"
flock 9
if [[ -f $prefix/.complete ]]; then
  echo "$prefix"
  exit 0
fi
log() { printf '[ffmpeg] %s\n' "$*" >&2; }
jobs=$(nproc)
start=$(date +%s)
as_root() {
  if [[ $(id -u) -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo -n "$@"
  else
    log "needs root for: $*"
    exit 1
  fi
}
export DEBIAN_FRONTEND=noninteractive

missing=()
for p in "${BUILD_DEPS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing build dependencies: ${missing[*]}"
  as_root apt-get update -qq
  as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# A deb-src entry beside the machine's own deb entries (same mirrors, suites and keys).
has_source() { apt-cache showsrc "ffmpeg=$FFMPEG_VERSION" 2>/dev/null | grep -q "^Version: $FFMPEG_VERSION"; }
if ! has_source; then
  if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
    sed 's/^Types: .*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
      as_root tee /etc/apt/sources.list.d/ec-src.sources >/dev/null
  else
    grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | sed 's/^deb /deb-src /' |
      as_root tee /etc/apt/sources.list.d/ec-src.list >/dev/null
  fi
  log "added a deb-src entry under /etc/apt/sources.list.d/ (ec-src)"
  as_root apt-get update -qq
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ec-ffmpeg-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
stage=$prefix.partial
rm -rf "$stage"
mkdir -p "$stage"
cd "$work"
log "apt-get source ffmpeg=$FFMPEG_VERSION dav1d=$DAV1D_VERSION"
apt-get source -qq -o APT::Sandbox::User=root "ffmpeg=$FFMPEG_VERSION" "dav1d=$DAV1D_VERSION" >&2

log "dav1d: static PIC"
(
  cd dav1d-1.0.0
  meson setup build --prefix="$stage" --libdir=lib --buildtype=release --default-library=static \
    -Db_staticpic=true -Denable_tools=false -Denable_tests=false -Denable_examples=false >&2
  ninja -C build -j "$jobs" install >&2
)

log "ffmpeg: configure"
cd ffmpeg-5.1.9
PKG_CONFIG_PATH=$stage/lib/pkgconfig ./configure --prefix="$stage" \
  --enable-static --disable-shared --enable-pic --pkg-config-flags=--static \
  --disable-autodetect --disable-everything --disable-programs --disable-doc --disable-network \
  --disable-avdevice --disable-avformat --disable-avfilter --disable-swresample --disable-postproc \
  --disable-debug --disable-iconv --enable-zlib --enable-libdav1d \
  --enable-ffnvcodec --enable-cuda --enable-nvdec \
  --enable-decoder="$DECODERS" --enable-hwaccel="$HWACCELS" >"$work/configure.log" || {
  tail -40 ffbuild/config.log >&2
  exit 1
}
grep -qx '#define CONFIG_GPL 0' config.h && grep -qx '#define CONFIG_NONFREE 0' config.h || {
  log "configure enabled GPL or nonfree parts"
  exit 1
}
log "ffmpeg: make -j$jobs"
make -j "$jobs" >"$work/make.log" 2>&1 || {
  tail -40 "$work/make.log" >&2
  exit 1
}
make install >/dev/null

mkdir -p "$stage/share/licenses"
cp COPYING.LGPLv2.1 "$stage/share/licenses/FFmpeg-LGPL-2.1.txt"
cp ../dav1d-1.0.0/COPYING "$stage/share/licenses/dav1d-BSD-2-Clause.txt"
cp /usr/share/doc/zlib1g-dev/copyright "$stage/share/licenses/zlib.txt" 2>/dev/null ||
  cp /usr/share/doc/zlib1g/copyright "$stage/share/licenses/zlib.txt"
cp "$work/configure.log" "$stage/share/configure.log"
echo "$FFMPEG_VERSION dav1d $DAV1D_VERSION built in $(($(date +%s) - start)) s on $jobs cores" >"$stage/.complete"
rm -rf "$prefix"
mv "$stage" "$prefix"
log "built in $(($(date +%s) - start)) s: $prefix"
echo "$prefix"
