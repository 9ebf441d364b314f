"""The wheel as a user gets it: `npm run wheel`, then `pip install` into a fresh virtual environment
from a local wheelhouse with no index, with no node on PATH and no EC_ENGINE; the README's three
lines on a local folder and on an s3:// bucket (a real S3 server on loopback), and `ec` itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Dict, Iterator

import pytest

from conftest import ROOT, node

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([node(), str(ROOT / "scripts" / "wheel.mjs"), "--out", str(out)], capture_output=True, text=True, cwd=str(ROOT))
    assert built.returncode == 0, built.stderr[-3000:]
    return Path(built.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def venv(tmp_path_factory, wheel: Path) -> Path:
    """A virtual environment of its own (not over the system's packages) with the wheel installed offline."""
    house = subprocess.run([node(), str(ROOT / "scripts" / "wheelhouse.mjs"), "--python", sys.executable], capture_output=True, text=True, cwd=str(ROOT))
    assert house.returncode == 0, house.stderr[-3000:]
    path = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    subprocess.run(
        [str(path / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile", "--no-index", "--find-links", house.stdout.strip(), str(wheel)],
        check=True, env=env,
    )
    return path


@pytest.fixture(scope="module")
def s3_server() -> Iterator[Dict[str, str]]:
    proc = subprocess.Popen([node(), str(HERE / "s3_server.mjs"), str(ROOT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, "the S3 server exited before it listened"
        yield json.loads(line)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


def bare_env(venv: Path) -> Dict[str, str]:
    """What a user's shell has after `pip install`: the venv's bin on PATH, no node, no EC_ENGINE or EC_NODE."""
    keep = ("HOME", "LANG", "TMPDIR")
    return {**{k: os.environ[k] for k in keep if k in os.environ}, "PATH": str(venv / "bin")}


def test_the_wheel_holds_the_client_the_cli_bundle_and_the_addon(wheel: Path):
    assert wheel.name.startswith("ec-0.1.0-py3-none-manylinux_2_") and wheel.name.endswith("_x86_64.whl"), wheel.name
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("ec/__init__.py", "ec/_cli.py", "ec/_bundle/cli/ec.cjs", "ec/_bundle/cli/engine.bundle.cjs",
                 "ec/_bundle/prebuilds/linux-x64/ec_native.node", "ec/_bundle/prebuilds/linux-x64/licenses/FFmpeg-LGPL-2.1.txt",
                 "ec/_bundle/licenses/npm/zod-LICENSE", "ec/_bundle/about.json"):
        assert name in names, name
    # Nothing of the checkout's node_modules or dist/ modules: the CLI is the one bundled file.
    assert not any(n.endswith((".js", ".mjs", ".ts")) for n in names), sorted(n for n in names if n.endswith((".js", ".mjs", ".ts")))
    assert wheel.stat().st_size <= 40 * 1024 * 1024


def test_installed_wheel_streams_a_folder_and_a_bucket_with_no_node_on_path(venv: Path, videos: Path, s3_server: Dict[str, str]):
    done = subprocess.run(
        [str(venv / "bin" / "python"), str(HERE / "wheel_check.py"), str(videos), json.dumps(s3_server)],
        capture_output=True, text=True, env=bare_env(venv), cwd=str(venv),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["engine"][1].endswith("ec/_bundle/cli/ec.cjs")
    assert sum(len(b["keys"]) for b in report["s3"]) == report["stream"]["clips"] > 0


def test_ec_dev_says_what_to_install(venv: Path):
    done = subprocess.run([str(venv / "bin" / "ec"), "dev"], capture_output=True, text=True, env=bare_env(venv))
    assert done.returncode == 1
    assert "[ERR_DEV_WRANGLER_MISSING]" in done.stderr and "npm install ec wrangler@4.86.0" in done.stderr, done.stderr


def test_a_node_on_path_or_ec_node_comes_before_the_wheels(venv: Path):
    probe = "from ec._engine import engine_command; print(engine_command()[0])"
    here = os.environ.get("EC_NODE") or node()
    on_path = {**bare_env(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{os.path.dirname(here)}"}
    found = subprocess.run([str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True, env=on_path, check=True).stdout.strip()
    assert os.path.dirname(found) == os.path.dirname(here)
    chosen = subprocess.run([str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True, check=True,
                            env={**bare_env(venv), "EC_NODE": here}).stdout.strip()
    assert chosen == here
