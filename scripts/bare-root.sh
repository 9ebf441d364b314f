# Sourced by the checks that run in a bare Debian root (gpu-bundle-verify.sh, wheel-verify.sh),
# after they define say().
# bare_root DIR [PACKAGES]: makes DIR a `debootstrap --variant=minbase bookworm` root from this
# machine's Debian mirror, with PACKAGES (comma-separated) added; once: a DIR already made is kept.
bare_root() {
  local dir=$1 include=${2:-} mirror
  [[ -x $dir/bin/bash ]] && return 0
  command -v debootstrap >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
  # The mirror this machine's apt uses.
  mirror=$(grep -hoE '^URIs: *\S+' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1 | awk '{print $2}')
  [[ -n $mirror ]] || mirror=$(grep -hoE '^deb +\S+' /etc/apt/sources.list 2>/dev/null | grep -v security | head -1 | awk '{print $2}')
  printf '[bare-root] debootstrap --variant=minbase %sbookworm %s from %s (once per machine)\n' \
    "${include:+--include=$include }" "$dir" "${mirror:=http://deb.debian.org/debian}" >&2
  rm -rf "$dir.partial"
  debootstrap --variant=minbase ${include:+"--include=$include"} bookworm "$dir.partial" "$mirror" >/dev/null
  mv "$dir.partial" "$dir"
}

# require_root [--if-changed]: debootstrap and chroot need root. Not root, a check run by CI with
# --if-changed is skipped (exit 0, saying so), and one asked for by hand fails.
require_root() {
  [[ $(id -u) -eq 0 ]] && return 0
  if [[ ${1:-} == --if-changed ]]; then
    say "skipped: debootstrap and chroot need root, and this runs as $(id -un)"
    exit 0
  fi
  say "Expected to run as root (debootstrap, chroot) but running as $(id -un)"
  exit 1
}
