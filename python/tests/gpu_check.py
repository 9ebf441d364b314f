#!/usr/bin/env python3
"""GPU check of the Python client's CUDA tensors (for a CUDA host; CI has none).

    python3 python/tests/gpu_check.py VIDEO_DIR [--device cuda:0] [--av1 AV1_DIR] [--out REPORT.json]

For the same clips, batches from ``device="cuda:N"`` must be CUDA tensors on that device, made
without a host copy (CUDA IPC), and agree with ``device="cpu"``: native frames' luma planes
equal byte for byte (NVDEC's output equals the software decoder's), rgb24 frames within the GPU
conversion's stated tolerance (mean |diff| <= 3.5 of 255, >= 88 % of samples within 3). With
``--av1``, a folder of AV1 video streams on that device too: decoded by NVDEC where the device's
decodes AV1, else on the CPU (an H100/H200 has no AV1 NVDEC) and counted in
``stats()["decode_fallbacks"]``, never an error. Prints
one JSON report; exits 1 on any failed equality, 0 with "skipped" where no CUDA device is.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import torch  # noqa: E402

import ec  # noqa: E402


def batches(url, **options):
    with ec.open(url, shuffle="none", seed=0, frames=4, batch=2, **options) as ds:
        for b in ds:
            yield b
            del b


def main():
    p = argparse.ArgumentParser()
    p.add_argument("videos")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--av1")
    p.add_argument("--out")
    a = p.parse_args()
    report = {"device": a.device, "checks": {}}
    if not torch.cuda.is_available():
        report["skipped"] = "torch sees no CUDA device"
        print(json.dumps(report))
        return 0
    ok = True
    index = int(a.device.split(":")[1])

    # native: luma planes byte-exact; the tensors live on the device.
    frames = exact = 0
    resident = True
    for cpu, gpu in zip(batches(a.videos, format="native", device="cpu"), batches(a.videos, format="native", device=a.device)):
        resident &= gpu.frames.is_cuda and gpu.frames.device.index == index
        assert [c["key"] for c in cpu.clips] == [c["key"] for c in gpu.clips]
        src = cpu.clips[0].get("source") or {}
        luma = int(src.get("width", 0)) * int(src.get("height", 0))
        g = gpu.frames.cpu()
        for i in range(cpu.frames.shape[0]):
            for t in range(cpu.frames.shape[1]):
                frames += 1
                exact += bool(torch.equal(cpu.frames[i, t, :luma], g[i, t, :luma]))
    report["checks"]["native_luma_exact"] = {"frames": frames, "equal": exact, "on_device": resident}
    ok &= frames > 0 and exact == frames and resident

    # rgb24 converted on the GPU against libswscale on the CPU.
    diffs, within, total = 0.0, 0, 0
    for cpu, gpu in zip(batches(a.videos, size=(96, 128), device="cpu"), batches(a.videos, size=(96, 128), device=a.device)):
        resident &= gpu.frames.is_cuda
        d = (gpu.frames.to(torch.int16) - cpu.frames.to(a.device).to(torch.int16)).abs()
        diffs += float(d.float().sum())
        within += int((d <= 3).sum())
        total += d.numel()
    mean = diffs / max(1, total)
    report["checks"]["rgb24_within_tolerance"] = {"mean_abs_diff": mean, "within3": within / max(1, total), "on_device": resident}
    ok &= total > 0 and mean <= 3.5 and within / total >= 0.88 and resident

    if a.av1:
        errors = []
        clips = 0
        on_device = True
        with ec.open(a.av1, frames=4, batch=2, device=a.device, on_error=lambda code, message, clip: errors.append(f"{code}: {message}")) as ds:
            for b in ds:
                clips += len(b.clips)
                on_device &= b.frames.is_cuda
                del b
            stats = ds.stats()
        fallbacks = stats.get("decode_fallbacks", {})
        # Either NVDEC decoded every clip, or every clip fell back to the CPU and says so.
        fell_back = fallbacks.get("count") == clips and fallbacks.get("codecs") == ["av1"]
        decoded_on_gpu = fallbacks.get("count") == 0
        report["checks"]["av1_nvdec_or_counted_cpu_fallback"] = {"clips": clips, "errors": errors, "decode_fallbacks": fallbacks, "on_device": on_device}
        ok &= clips > 0 and not errors and on_device and (fell_back or decoded_on_gpu)

    report["ok"] = ok
    text = json.dumps(report)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
