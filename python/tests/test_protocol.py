"""The client checks every message of the engine before it indexes, sizes or maps memory by it: a
message out of protocol is ``ERR_ENGINE_PROTOCOL``, never a view of the wrong memory, a crash or a
read past a buffer. The engine here is a stand-in (fake_engine.py) that sends what each test says."""

from __future__ import annotations

import base64
import json
import os
import stat
import sys
from pathlib import Path

import pytest

import ec
from conftest import ROOT

FAKE = ROOT / "python" / "tests" / "fake_engine.py"
CLIP = {"key": "a.mp4", "start": 0, "frames": 2, "stride": 1, "pts": [0.0, 0.04], "position": 0, "labels": {}}
# Two clips of 2 frames of 4x4 rgb24 in slot 0 of a ring of 2 slot files of 4096 bytes.
GOOD = {
    "event": "batch", "seq": 1, "slot": 0, "capacity": 4096, "bytes": 2 * 2 * 4 * 4 * 3, "shape": [2, 2, 4, 4, 3],
    "dtype": "uint8", "pixel_format": "rgb24", "device": "cpu", "clips": [CLIP, {**CLIP, "start": 2, "position": 1}],
}


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Makes the next ec.open talk to fake_engine.py with the given script."""
    command = tmp_path / "ec"
    command.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    command.chmod(command.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("EC_ENGINE", str(command))
    monkeypatch.setenv("EC_SHM_DIR", str(tmp_path))

    def script(batch: dict, **fields) -> None:
        monkeypatch.setenv("EC_FAKE", json.dumps({"batch": batch, **fields}))

    return script


def first_batch(**options):
    ds = ec.open("/fake", **options)
    try:
        return next(iter(ds)), ds
    except BaseException:
        ds.close()
        raise


def test_the_stand_in_speaks_the_protocol(fake):
    fake(GOOD)
    batch, ds = first_batch()
    assert tuple(batch.frames.shape) == (2, 2, 4, 4, 3) and [c["start"] for c in batch.clips] == [0, 2]
    ds.close()


@pytest.mark.parametrize(
    "change",
    [
        {"slot": -1},  # accepted before: a view of the ring's last slot
        {"slot": 2},  # past the ring of 2
        {"slot": True},
        {"shape": [2, 2, 32, 32, 3], "bytes": 2 * 2 * 32 * 32 * 3},  # past the slot's 4096 bytes
        {"bytes": 100},  # not the shape's
        {"shape": [2, -2, 4, 4, 3]},
        {"shape": "2x2"},
        {"dtype": "complex64", "bytes": 2 * 2 * 4 * 4 * 3 * 8},  # no dtype the engine sends; accepted before
        {"clips": [CLIP]},  # one clip for two rows; accepted before
        {"capacity": 1 << 20},  # more than the file holds: a view past its end would fault
        {"ipc": base64.b64encode(bytes(64)).decode(), "device": "cuda:0"},  # device memory this client did not ask for
        {"seq": 0},
        {"slot": None},
    ],
)
def test_a_batch_out_of_protocol_is_refused(fake, change):
    fake({**GOOD, **change})
    with pytest.raises(ec.Error) as err:
        first_batch()
    assert err.value.code == "ERR_ENGINE_PROTOCOL"


def test_an_engine_out_of_protocol_gets_no_second_chance(fake):
    fake({**GOOD, "slot": -1})
    ds = ec.open("/fake")
    it = iter(ds)
    with pytest.raises(ec.Error) as first:
        next(it)
    with pytest.raises(ec.Error) as second:
        next(it)
    assert first.value is second.value and first.value.code == "ERR_ENGINE_PROTOCOL"
    ds.close()


@pytest.mark.parametrize("handle", [bytes(10), bytes(65), b"not base64!"])
def test_a_cuda_ipc_handle_not_of_64_bytes_is_refused_before_any_driver_call(fake, monkeypatch, handle):
    from ec import _cuda

    # This host's CUDA does not matter: the handle is refused before the driver is asked for anything.
    monkeypatch.setattr(_cuda, "require_cuda", lambda device: None)
    monkeypatch.setattr(_cuda, "driver", lambda: pytest.fail("the driver was called"))
    ipc = handle.decode() if handle == b"not base64!" else base64.b64encode(handle).decode()
    fake({**GOOD, "ipc": ipc, "device": "cuda:0"})
    with pytest.raises(ec.Error) as err:
        first_batch(device="cuda:0")
    assert err.value.code == "ERR_ENGINE_PROTOCOL"


@pytest.mark.parametrize("opened", [{"slots": []}, {"slots": "two"}, {"slots": [{"capacity": 0}]}, {"clips": -1}])
def test_an_opened_event_out_of_protocol_is_refused(fake, opened):
    fake(GOOD, opened=opened)
    with pytest.raises(ec.Error) as err:
        ec.open("/fake")
    assert err.value.code == "ERR_ENGINE_PROTOCOL"



def test_an_unknown_clip_count_is_none_and_len_says_why(fake):
    # The engine sends null where the count is known only at the epoch's end (table pages read lazily).
    fake(GOOD, opened={"clips": None, "total": None})
    ds = ec.open("/fake")
    try:
        assert ds.clip_count is None and ds.total_clips is None
        with pytest.raises(TypeError, match="not known until its epoch ends"):
            len(ds)
    finally:
        ds.close()
