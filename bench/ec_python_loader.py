#!/usr/bin/python3
"""ec from PyTorch: the same clips as the TypeScript rows, through ec.torch.ClipDataset in a
DataLoader (batch_size=None, num_workers=0: the engine decodes in parallel itself).

Run by `npm run bench` (bench/compare): the ec_python row under the checkout's client, the
ec_python_wheel row under a virtual environment's Python with the wheel installed. Prints one
JSON line, the row's report, last.
usage: ec_python_loader.py ARGS_JSON   ({"url", "options" (open() options, camelCase), "stepMs"})
"""
import json
import os
import re
import resource
import sys
import time

# The checkout's client, unless the row runs the one installed from the wheel (EC_BENCH_CLIENT=installed).
if os.environ.get("EC_BENCH_CLIENT") != "installed":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "src"))

import ec  # noqa: E402
import ec.torch  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402
from training_loop import drive, emit  # noqa: E402


def snake(name):
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def cpu_seconds(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def main():
    args = json.loads(sys.argv[1])
    options = {snake(k): v for k, v in args["options"].items()}
    step = args.get("stepMs", 0) / 1000
    cpu0 = cpu_seconds(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    ds = ec.torch.ClipDataset(args["url"], **options)
    loader = DataLoader(ds, batch_size=None, num_workers=0)
    counted = {"clips": 0, "frames": 0}
    clip_list = []

    def take(batch):
        for c in batch.clips:
            counted["clips"] += 1
            counted["frames"] += c["frames"]
            clip_list.append({"key": c["key"], "start": c["start"], "startSeconds": c["pts"][0] if c["pts"] else 0, "frames": c["frames"], "stride": c["stride"]})

    it = iter(loader)
    # This process does nothing but the bridge (events, mappings, tensor views, the DataLoader): all its CPU is the bridge's.
    bridge0 = time.process_time()
    waited, first = drive(it, t0, step, take)
    bridge = time.process_time() - bridge0
    # The stream has ended and its dataset is closed (the TypeScript row's clock stops there too):
    # the engine process's exit below is paid once per process, like its start-up, not per epoch.
    end = time.perf_counter()
    del it
    # The engine is this process's child: its CPU is the row's too. ClipDataset keeps it from epoch to
    # epoch, so it is stopped and reaped here (else RUSAGE_CHILDREN would not count it).
    ds.close()
    emit(
        t0, waited, first, end, **counted,
        cpuSeconds=cpu_seconds(resource.RUSAGE_SELF) - cpu0 + cpu_seconds(resource.RUSAGE_CHILDREN),
        bridgeCpuSeconds=bridge, clipList=clip_list, device="cpu",
    )


if __name__ == "__main__":
    main()
