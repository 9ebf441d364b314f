"""What the Python rows of `npm run bench` share: a training loop that takes a batch, counts it
and sleeps a simulated step, timing how long it waited for each batch; the peer loaders'
arguments, batching and CPU and read accounting."""
import argparse
import json
import resource
import sys
import time


def drive(batches, t0, step_s, take):
    """Iterates `batches` as a training loop would, calling `take(batch)` for each; returns
    (seconds waited for batches, seconds from `t0` to the first batch or None)."""
    waited, first = 0.0, None
    while True:
        asked = time.perf_counter()
        try:
            batch = next(batches)
        except StopIteration:
            break
        now = time.perf_counter()
        waited += now - asked
        if first is None:
            first = now - t0
        take(batch)
        del batch
        if step_s > 0:
            time.sleep(step_s)
    return waited, first


def emit(t0, waited, first, end=None, **fields):
    """Prints the row's report as its last line: the timing keys the bench reads, then `fields`.
    `end` (a perf_counter time) ends the timed run where the stream ended, before later teardown."""
    wall = (time.perf_counter() if end is None else end) - t0
    report = {
        "seconds": wall,
        "firstBatchSeconds": first if first is not None else wall,
        "stallRatio": min(1.0, waited / wall) if wall > 0 else 0,
        **fields,
    }
    sys.stdout.write("\n" + json.dumps(report) + "\n")


def loader_args(*, size=False, size_help=None):
    """A peer loader's command line, `CLIPS.json --workers N --batch B [--step-ms MS]`, with
    `[--size HxW]` where `size` is True; returns (the arguments, the clips it names)."""
    p = argparse.ArgumentParser()
    p.add_argument("clips")
    p.add_argument("--workers", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--step-ms", type=float, default=0)
    if size:
        p.add_argument("--size", default=None, help=size_help)
    a = p.parse_args()
    with open(a.clips) as f:
        return a, json.load(f)


def stack(clips):
    """A batch of clips: one tensor, or a list where videos of different sizes cannot share one."""
    import torch

    if all(c.shape == clips[0].shape for c in clips):
        return torch.stack(clips)
    return clips


def count(counted, clips):
    """Adds a batch's clips and frames to `counted`."""
    for clip in clips:
        counted["clips"] += 1
        counted["frames"] += int(clip.shape[0])


def cpu_seconds(children=True):
    """CPU seconds of this process, and of its reaped children (DataLoader workers) unless `children` is False."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    if not children:
        return own.ru_utime + own.ru_stime
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def read_bytes():
    """Bytes this process (all its threads) read: local files' bytes, page cache or not."""
    with open("/proc/self/io") as f:
        return int(next(line for line in f if line.startswith("rchar:")).split()[1])
