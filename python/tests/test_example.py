"""The README's runnable example keeps running."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT


def test_train_tiny_runs_a_few_steps(videos):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python" / "src")}
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "train_tiny.py"), str(videos), "--steps", "3"],
                         check=True, capture_output=True, text=True, env=env, timeout=300).stdout
    lines = out.strip().splitlines()
    assert [l.split()[1] for l in lines if l.startswith("step ")] == ["1", "2", "3"]
    assert lines[-1] == "checkpoint: 12 clips consumed"
