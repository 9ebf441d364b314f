"""`pip install ./python` as a user would, offline, then the three lines from the README."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from conftest import ROOT


def test_pip_install_into_a_fresh_venv_and_stream(tmp_path, videos):
    venv = tmp_path / "venv"
    # Over the system's numpy and torch, as on a machine where they come from the distribution.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PIP_NO_INDEX"] = "1"  # offline: nothing may come from a registry
    # From a copy, as from an unpacked sdist: the build leaves nothing in the checkout.
    src = shutil.copytree(ROOT / "python", tmp_path / "python", ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps", str(src)],
                   check=True, env=env, cwd=str(tmp_path))
    code = (
        "import ec\n"
        "assert '/site-packages/' in ec.__file__, ec.__file__\n"
        f"ds = ec.open({str(videos)!r}, frames=4, size=(32, 32), batch=2, limit=2)\n"
        "for batch in ds: print(type(batch.frames).__name__, list(batch.frames.shape), len(batch.clips))\n"
        "ds.close()\n"
    )
    out = subprocess.run([str(py), "-c", code], check=True, capture_output=True, text=True, env=env, cwd=str(tmp_path)).stdout
    assert out.split("\n")[0] == "Tensor [2, 4, 32, 32, 3] 2"
