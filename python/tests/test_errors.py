"""Bad input: the engine's typed errors and messages, before any I/O; bad objects skipped and said."""

from __future__ import annotations

import pytest

import ec
from conftest import make_h264


@pytest.mark.parametrize(
    "options, message",
    [
        ({"frames": -3}, "Expected a positive integer for frames but received -3"),
        ({"shuffle_buffer": 0}, "Expected a positive integer for shuffle_buffer but received 0"),
        ({"align": "middle"}, 'Expected "keyframe" or "exact" for align but received "middle"'),
        ({"rank": 2, "world": 2}, "Expected rank below world (2) but received 2"),
        ({"shuffle": True}, "Expected a shuffle name or false for shuffle but received true"),
    ],
)
def test_invalid_options_raise_the_engines_message_before_any_io(options, message):
    # An unreachable URL: a message about it would mean I/O happened before validation.
    with pytest.raises(ValueError) as err:
        ec.open("http://127.0.0.1:9/v1/datasets/none", **options)
    assert isinstance(err.value, ec.InvalidOptionError) and not isinstance(err.value, TypeError)
    assert err.value.code == "ERR_INVALID_OPTION"
    assert err.value.message == message


@pytest.mark.parametrize(
    "options, message",
    [
        ({"drop_last": "yes"}, 'Expected a boolean for drop_last but received "yes"'),
        ({"frames": "8"}, 'Expected an integer for frames but received "8"'),
        ({"frames": True}, "Expected an integer for frames but received True"),
        ({"size": (32.5, 32)}, "Expected a list of integers or None for size but received a tuple of length 2"),
        ({"align": 3}, 'Expected "keyframe" or "exact" for align but received 3'),
    ],
)
def test_an_option_of_the_wrong_type_is_a_type_error_and_a_value_error(options, message):
    with pytest.raises(TypeError) as err:
        ec.open("http://127.0.0.1:9/v1/datasets/none", **options)
    assert isinstance(err.value, ec.InvalidOptionTypeError) and isinstance(err.value, ValueError)
    assert err.value.code == "ERR_INVALID_OPTION"
    assert err.value.message == message


def test_clip_dataset_checks_types_when_made_and_values_when_iterated():
    import ec.torch

    with pytest.raises(TypeError) as err:
        ec.torch.ClipDataset("/nowhere", batch="4")
    assert isinstance(err.value, ec.InvalidOptionTypeError)
    ds = ec.torch.ClipDataset("http://127.0.0.1:9/v1/datasets/none", batch=0)
    with pytest.raises(ValueError) as err:
        next(iter(ds))
    assert isinstance(err.value, ec.InvalidOptionError)
    assert err.value.message == "Expected a positive integer for batch but received 0"
    ds.close()


def test_an_unknown_option_is_pythons_own_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'frames_per_clip'"):
        ec.open("http://127.0.0.1:9/v1/datasets/none", frames_per_clip=8)  # type: ignore[call-arg]


def test_credentials_take_snake_case_keys_and_name_them_so():
    # The engine's fields are accessKeyId/secretAccessKey; a Python caller writes snake_case.
    with pytest.raises(ec.Error) as err:
        ec.open("s3://bucket/none", endpoint="http://127.0.0.1:9", credentials={"access_key_id": 5, "secret_access_key": "x"})
    assert err.value.code == "ERR_INVALID_OPTION"
    assert err.value.message == "Expected a string for credentials.access_key_id but received 5"


def test_python_only_options_are_checked_here():
    with pytest.raises(ec.InvalidOptionTypeError) as err:
        ec.open("/nowhere", labels=lambda clip, frames: {})
    assert err.value.code == "ERR_INVALID_OPTION" and "for labels" in err.value.message and "cannot run inside the engine" in err.value.message
    with pytest.raises(ec.InvalidOptionTypeError) as err:
        ec.open("/nowhere", on_error="print")
    assert err.value.message == 'Expected a function or None for on_error but received "print"'


def test_a_corrupt_object_is_skipped_and_reported(corrupt_dir):
    reported = []
    with ec.open(str(corrupt_dir), frames=4, batch=2, on_error=lambda code, message, clip: reported.append((code, message, clip))) as ds:
        keys = {c["key"] for b in ds for c in b.clips}
        stats = ds.stats()
    assert keys == {"good1.mp4", "good2.mp4"}
    assert reported and all("broken.mp4" in m for _, m, _ in reported)
    assert sum(stats["errors"].values()) == len(reported)


def test_a_missing_engine_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("EC_ENGINE", "/nonexistent/ec.js")
    with pytest.raises(ec.Error) as err:
        ec.open("/nowhere")
    assert err.value.code == "ERR_ENGINE_NOT_FOUND"


def test_a_cuda_device_without_one_fails_before_any_io():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this host has a CUDA device: python/tests/gpu_check.py checks it")
    with pytest.raises(ec.Error) as err:
        ec.open("http://127.0.0.1:9/v1/datasets/none", device="cuda:0")
    assert err.value.code == "ERR_DEVICE_UNAVAILABLE"


def test_a_dataset_without_a_clip_raises_no_clips(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ec.Error) as err:
        ec.open(str(empty), frames=16)
    assert err.value.code == "ERR_NO_CLIPS"
    assert err.value.message == "Expected at least one clip of 16 frames but the dataset holds no objects (an empty folder or prefix?)"
    short = tmp_path / "short"
    short.mkdir()
    make_h264(short / "a.mp4", frames=10)
    with pytest.raises(ec.Error) as err:
        ec.open(str(short), frames=16)
    assert err.value.code == "ERR_NO_CLIPS"
    assert err.value.message.endswith("the dataset's one object holds none: a.mp4 has 10 frames")
