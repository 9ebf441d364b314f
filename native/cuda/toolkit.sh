#!/usr/bin/env bash
# Prints a CUDA_HOME with cuda.h and nvcc for building the CUDA backend and its kernels: the
# machine's own toolkit when native/find-cuda.cjs finds one, else CUDA 13.0's compiler and
# headers from NVIDIA's pinned wheels on PyPI (no driver, no GPU needed to build), unpacked
# once per machine into ${XDG_CACHE_HOME:-$HOME/.cache}/ec/cuda-13.0.88. CUDA 13 builds need
# driver 580 or newer where they run.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
found=$(node "$here/find-cuda.cjs" --nvcc)
if [[ -n $found ]]; then
  dirname "$(dirname "$found")"
  exit 0
fi
WHEELS=(nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-nvvm==13.0.88)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/ec/cuda-13.0.88
home=$cache/nvidia/cu13
if [[ ! -x $home/bin/nvcc || ! -x $home/nvvm/bin/cicc || ! -f $home/include/cuda.h ]]; then
  printf '[cuda] fetching %s\n' "${WHEELS[*]}" >&2
  python=$(command -v python3 || command -v python)
  rm -rf "$cache.partial"
  mkdir -p "$cache.partial/wheels"
  "$python" -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 -d "$cache.partial/wheels" "${WHEELS[@]}" >&2
  for w in "$cache.partial"/wheels/*.whl; do
    "$python" -m zipfile -e "$w" "$cache.partial"
  done
  chmod +x "$cache.partial"/nvidia/cu13/bin/* "$cache.partial"/nvidia/cu13/nvvm/bin/*
  rm -rf "$cache.partial/wheels" "$cache"
  mv "$cache.partial" "$cache"
fi
echo "$home"
