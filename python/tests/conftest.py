"""Fixtures on real parts: videos made by ffmpeg now, the engine from this checkout, and the
local edge (workerd with a local R2) plus the origin-cache that ``ec dev`` starts."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

ROOT = Path(__file__).resolve().parents[2]
EC_JS = ROOT / "bin" / "ec.js"
os.environ.setdefault("EC_ENGINE", str(EC_JS))
# Tests run the package from this checkout unless an installed one is being tested.
sys.path.insert(0, str(ROOT / "python" / "src"))


def node() -> str:
    return os.environ.get("EC_NODE") or shutil.which("node") or "node"


def ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", *args], check=True)


def make_h264(path: Path, frames: int = 60, size: str = "160x96", gop: int = 12, bframes: int = 2, src: str = "testsrc2") -> Path:
    ffmpeg(
        "-f", "lavfi", "-i", f"{src}=size={size}:rate=25", "-frames:v", str(frames),
        "-c:v", "libx264", "-preset", "ultrafast", "-bf", str(bframes), "-g", str(gop),
        "-keyint_min", str(gop), "-sc_threshold", "0", "-pix_fmt", "yuv420p", str(path),
    )
    return path


def framemd5(path: Path) -> List[str]:
    """md5 of every frame in presentation order, as ``ffmpeg -f framemd5``."""
    out = subprocess.run(
        ["ffmpeg", "-hide_banner", "-loglevel", "error", "-i", str(path), "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "framemd5", "-"],
        check=True, capture_output=True, text=True,
    ).stdout
    return [line.split(",")[-1].strip() for line in out.splitlines() if line and not line.startswith("#")]


def md5(data) -> str:
    return hashlib.md5(memoryview(data).cast("B")).hexdigest()


@pytest.fixture(scope="session")
def videos(tmp_path_factory) -> Path:
    """Three short H.264 videos with B-frames (GOPs of 12), made by ffmpeg for this run."""
    d = tmp_path_factory.mktemp("videos")
    make_h264(d / "a.mp4", frames=60)
    make_h264(d / "b.mp4", frames=48, src="mandelbrot")
    make_h264(d / "c.mp4", frames=36, size="128x80")
    return d


@pytest.fixture(scope="session")
def corrupt_dir(tmp_path_factory, videos) -> Path:
    """Two good videos and one whose bytes are garbage."""
    d = tmp_path_factory.mktemp("corrupt")
    shutil.copy(videos / "a.mp4", d / "good1.mp4")
    shutil.copy(videos / "c.mp4", d / "good2.mp4")
    (d / "broken.mp4").write_bytes(b"\x00\x00\x00\x18ftypisom" + os.urandom(4000))
    return d


@pytest.fixture(scope="session")
def stack(tmp_path_factory, videos) -> Dict[str, str]:
    """`ec dev`: the edge in workerd with a local R2 and an origin-cache, the videos pushed to it."""
    persist = tmp_path_factory.mktemp("edge")
    proc = subprocess.Popen(
        [node(), str(EC_JS), "dev", "--port", "0", "--persist", str(persist), "--json"],
        cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={k: v for k, v in os.environ.items() if k not in ("EC_EDGE", "EC_TOKEN", "EC_SIGNING_KEY")},
    )
    try:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"ec dev exited: {proc.stderr.read()[-3000:]}")
        fields = json.loads(line)
        push = subprocess.run(
            [node(), str(EC_JS), "push", str(videos), "py", "--edge", fields["edge"], "--token", fields["token"], "--json"],
            cwd=str(ROOT), capture_output=True, text=True,
        )
        assert push.returncode == 0, push.stderr
        yield {"url": f"{fields['edge']}/v1/datasets/py", "token": fields["token"], "cache": fields.get("cache", "")}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
