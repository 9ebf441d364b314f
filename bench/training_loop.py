"""The consumer both Python rows of `npm run bench` share: a training loop that takes a batch,
counts it and sleeps a simulated step, timing how long it waited for each batch."""
import json
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
