# Sourced by the checks that run in a bare Debian root (gpu-bundle-verify.sh, wheel-verify.sh).
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
