"""Frames read in Python are the engine's frames: md5-equal to ffmpeg's, byte-equal to TypeScript's."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import torch

import ec
from conftest import EC_JS, ROOT, framemd5, md5, node


def test_native_frames_equal_ffmpeg_framemd5_through_edge_and_cache(stack, videos):
    # align="exact" with a hop that is not a multiple of the GOP: most clips start mid-GOP.
    want = {p.name: framemd5(p) for p in videos.glob("*.mp4")}
    seen = 0
    with ec.open(stack["url"], token=stack["token"], cache=stack["cache"], frames=5, hop=7, align="exact",
                 format="native", batch=3, seed=3) as ds:
        for batch in ds:
            assert isinstance(batch.frames, torch.Tensor) and batch.frames.dtype == torch.uint8
            assert batch.frames.dim() == 3  # [B, T, bytes_per_frame]
            for i, clip in enumerate(batch.clips):
                for t in range(clip["frames"]):
                    index = clip["start"] + t * clip["stride"]
                    assert md5(batch.frames[i, t].numpy()) == want[clip["key"].rsplit("/", 1)[-1]][index], f"{clip['key']} frame {index}"
                    seen += 1
        stats = ds.stats()
    assert seen == stats["frames"] > 0
    assert sum(1 for w in want.values() for _ in w) >= seen
    assert any(c % 12 != 0 for c in range(0, 60, 7))  # the starts above really are mid-GOP


def test_rgb24_frames_equal_the_typescript_stream_byte_for_byte(videos):
    options = {"frames": 4, "size": [40, 56], "batch": 2, "seed": 1}
    ts = subprocess.run([node(), str(ROOT / "python" / "tests" / "ts_frames.mjs"), str(ROOT), str(videos), json.dumps(options)],
                        check=True, capture_output=True, text=True).stdout.split()
    py = []
    with ec.open(str(videos), frames=4, size=(40, 56), batch=2, seed=1) as ds:
        for batch in ds:
            assert tuple(batch.frames.shape[1:]) == (4, 40, 56, 3)
            for i, clip in enumerate(batch.clips):
                for t in range(4):
                    py.append(f"{clip['key']},{clip['start']},{t},{md5(batch.frames[i, t].numpy())}")
    assert py == ts and len(py) > 0


def test_clips_carry_the_contract_fields(videos):
    with ec.open(str(videos), frames=3, limit=2) as ds:
        clip = next(iter(ds)).clips[0]
    assert {"key", "start", "frames", "stride", "pts", "position", "labels"} <= set(clip)
    assert clip["frames"] == 3 and len(clip["pts"]) == 3


def test_numpy_when_torch_is_absent(videos):
    # A child interpreter in which torch cannot be imported gets numpy arrays.
    code = (
        "import sys; sys.modules['torch'] = None\n"
        f"sys.path.insert(0, {str(ROOT / 'python' / 'src')!r})\n"
        "import ec, numpy\n"
        f"ds = ec.open({str(videos)!r}, frames=2, batch=2, limit=2)\n"
        "b = next(iter(ds)); print(type(b.frames).__name__, b.frames.dtype, list(b.frames.shape)); ds.close()\n"
    )
    out = subprocess.run([__import__("sys").executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.split()[0] == "ndarray" and out.split()[1] == "uint8"


def test_arrays_come_with_their_dtype_and_shape(tmp_path):
    for i in range(3):
        np.save(tmp_path / f"x{i}.npy", np.arange(12, dtype=np.float32).reshape(3, 4) + i)
    with ec.open(str(tmp_path), batch=3, shuffle="none") as ds:
        batch = next(iter(ds))
    assert batch.frames.dtype == torch.float32 and tuple(batch.frames.shape) == (3, 3, 4)
    got = sorted(float(batch.frames[i, 0, 0]) for i in range(3))
    assert got == [0.0, 1.0, 2.0]
