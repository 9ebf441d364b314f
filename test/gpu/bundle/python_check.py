#!/usr/bin/env python3
"""The Python client's check inside the GPU bundle: run by check.mjs with the machine's own
python3 and torch, the bundle's node as the engine's runtime (EC_NODE) and its addon
(EC_NATIVE_PATH). Runs python/tests/gpu_check.py on the bundle's 8-bit videos: CUDA tensors over
CUDA IPC, on the device, agreeing with the CPU path. Prints "SKIP: why" last where it cannot run.
"""

import os
import shutil
import subprocess
import sys
import tempfile

bundle = os.environ.get("EC_BUNDLE") or os.path.dirname(os.path.abspath(__file__))


def skip(why):
    print(f"SKIP: {why}")
    return 0


def main():
    if os.environ.get("EC_NO_GPU"):
        return skip(os.environ["EC_NO_GPU"])
    try:
        import torch
    except ImportError:
        return skip("this python3 has no torch")
    if not torch.cuda.is_available():
        return skip("torch sees no CUDA device")
    videos = tempfile.mkdtemp(prefix="ec-python-check-")
    av1 = None
    try:
        # 8-bit files: their luma planes are the same bytes in NV12 (NVDEC) and yuv420p (CPU).
        for name in ("h264-bframes.mp4", "hevc-8bit.mp4"):
            shutil.copy(os.path.join(bundle, "videos", name), videos)
        # AV1 apart: streamed on the device by NVDEC where it decodes AV1, else by a counted CPU fallback.
        av1 = tempfile.mkdtemp(prefix="ec-python-check-av1-")
        shutil.copy(os.path.join(bundle, "videos", "av1.mp4"), av1)
        env = {**os.environ, "EC_ENGINE": os.path.join(bundle, "engine.mjs")}
        script = os.path.join(bundle, "python", "tests", "gpu_check.py")
        out = os.path.join(os.environ.get("OUT") or os.path.join(bundle, "out"), "python-check.json")
        return subprocess.run([sys.executable, script, videos, "--av1", av1, "--out", out], env=env).returncode
    finally:
        shutil.rmtree(videos, ignore_errors=True)
        if av1:
            shutil.rmtree(av1, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
