"""Batches are decoded straight into the shared-memory slots the client maps; copied only when out of slot order."""

from __future__ import annotations

import json
import subprocess

import ec
from conftest import ROOT, md5, node


def frames_of(ds) -> list:
    lines = []
    for batch in ds:
        for i, clip in enumerate(batch.clips):
            for t in range(clip["frames"]):
                lines.append(f"{clip['key']},{clip['start']},{t},{md5(batch.frames[i, t].numpy())}")
    return lines


def ts_frames(url: str, options: dict) -> list:
    out = subprocess.run([node(), str(ROOT / "python" / "tests" / "ts_frames.mjs"), str(ROOT), url, json.dumps(options)],
                         check=True, capture_output=True, text=True).stdout
    return out.split()


def test_an_in_order_epoch_is_decoded_into_the_slots_without_a_copy(videos):
    options = {"frames": 4, "size": [40, 56], "batch": 2, "seed": 1}
    with ec.open(str(videos), **options) as ds:
        py = frames_of(ds)
        stats = ds.stats()
    assert py == ts_frames(str(videos), options) and len(py) > 0
    assert stats["bytes_delivered"] > 0
    assert stats["slot_bytes_copied"] == 0
    assert stats["slot_bytes_in_place"] == stats["bytes_delivered"]


def test_batches_out_of_slot_order_are_copied_and_still_exact(videos):
    # Without a common size, a clip of another size closes its batch early: later batches start
    # mid-group, so they are copied into a slot of their own.
    options = {"frames": 4, "batch": 3, "seed": 2}
    with ec.open(str(videos), **options) as ds:
        py = frames_of(ds)
        stats = ds.stats()
    assert py == ts_frames(str(videos), options) and len(py) > 0
    assert stats["slot_bytes_copied"] > 0
    assert stats["slot_bytes_copied"] + stats["slot_bytes_in_place"] == stats["bytes_delivered"]


def test_a_slow_consumer_still_gets_every_batch_in_place(videos):
    # The engine waits for a free slot before decoding further ahead, instead of into heap memory.
    import time

    with ec.open(str(videos), frames=2, size=(32, 32), batch=2, prefetch=4, seed=3) as ds:
        n = 0
        for _ in ds:
            time.sleep(0.02)
            n += 1
        stats = ds.stats()
    assert n > 5
    assert stats["slot_bytes_copied"] == 0 and stats["slot_bytes_in_place"] == stats["bytes_delivered"]
