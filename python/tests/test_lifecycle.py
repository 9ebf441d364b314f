"""The bridge's guarantees: held tensors stay intact, memory stays bounded, no hang, no orphan."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ec
from conftest import ROOT, make_h264


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()


@pytest.fixture(scope="module")
def long_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("long")
    for i in range(2):
        make_h264(d / f"long{i}.mp4", frames=250, size="96x64", gop=25)
    return d


def test_a_held_tensor_is_not_overwritten_while_the_stream_goes_on(videos):
    with ec.open(str(videos), frames=4, size=(32, 32), batch=2, prefetch=2) as ds:
        it = iter(ds)
        held = next(it).frames
        copy = held.clone()
        for _ in it:  # the ring (4 slots) is reused many times meanwhile
            pass
        assert bool((held == copy).all())


def test_holding_every_slot_is_said_not_hung(videos):
    with ec.open(str(videos), frames=2, size=(16, 16), batch=1, prefetch=1) as ds:
        it = iter(ds)
        kept = [next(it) for _ in range(len(ds._maps))]  # prefetch=1, batch=1: a ring of 4 slots
        with pytest.raises(ec.Error) as err:
            next(it)
        assert err.value.code == "ERR_RING_FULL"
        kept.pop(0)
        assert next(it).frames.shape[0] == 1  # a freed slot lets the stream go on


def test_memory_of_both_processes_stays_bounded_over_a_long_stream(long_dir):
    with ec.open(str(long_dir), frames=2, hop=1, align="exact", size=(64, 64), batch=4, seed=1) as ds:
        samples = []
        for n, batch in enumerate(ds):
            if n % 10 == 0:
                samples.append((rss_kib(os.getpid()), rss_kib(ds._engine.pid)))
        assert n > 100
    warm = samples[len(samples) // 4]
    peak = tuple(max(s[i] for s in samples[len(samples) // 4:]) for i in range(2))
    # After warm-up neither process grows by more than a few slots' worth (each batch is 96 KiB).
    assert peak[0] - warm[0] < 48 * 1024, samples
    assert peak[1] - warm[1] < 96 * 1024, samples


def test_killing_the_engine_becomes_an_error_within_seconds(long_dir):
    ds = ec.open(str(long_dir), frames=2, hop=1, align="exact", batch=1)
    it = iter(ds)
    next(it)
    os.kill(ds._engine.pid, signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(ec.Error) as err:
        for _ in it:
            pass
    assert err.value.code == "ERR_ENGINE_EXITED" and "SIGKILL" in err.value.message
    assert time.monotonic() - start < 10
    ds.close()


def test_killing_the_python_parent_ends_the_engine(long_dir):
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'python' / 'src')!r})\n"
        "import ec, time\n"
        f"ds = ec.open({str(long_dir)!r}, frames=2, hop=1, align='exact', batch=1)\n"
        "next(iter(ds)); print(ds._engine.pid, flush=True); time.sleep(120)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    engine_pid = int(parent.stdout.readline())
    assert alive(engine_pid)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while alive(engine_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(engine_pid)


def test_no_slot_file_is_left_behind(videos):
    before = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    with ec.open(str(videos), frames=2, limit=3) as ds:
        for _ in ds:
            pass
    gc.collect()
    after = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    assert not {f for f in after - before if f.startswith("ec-")}


def test_a_dataset_iterates_once(videos):
    with ec.open(str(videos), frames=2, limit=1) as ds:
        list(ds)
        with pytest.raises(ec.Error) as err:
            iter(ds)
    assert err.value.code == "ERR_ALREADY_ITERATED"


def test_torch_is_imported_while_the_engine_opens_not_inside_the_first_batch(videos):
    # Imported inside the first batch, torch's seconds of import kept the engine's batches waiting for their acks.
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import ec\n"
        "ds = ec.open(sys.argv[2], frames=2, limit=1)\n"
        "print('torch' in sys.modules)\n"
        "print(type(next(iter(ds)).frames).__module__)\n"
        "ds.close()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "python" / "src"), str(videos)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "torch"]


def test_import_ec_loads_neither_numpy_nor_tempfile_until_a_dataset_opens(videos):
    # `import ec` (the CLI, a process that opens no dataset) pays for neither; open() loads numpy while the engine starts.
    code = (
        "import sys; sys.modules['torch'] = None; sys.path.insert(0, sys.argv[1]); import ec\n"
        "print(sorted(m for m in ('numpy', 'numpy.typing', 'tempfile') if m in sys.modules))\n"
        "ds = ec.open(sys.argv[2], frames=2, limit=1)\n"
        "print('numpy' in sys.modules)\n"
        "print(type(next(iter(ds)).frames).__module__)\n"
        "ds.close()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "python" / "src"), str(videos)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["[]", "True", "numpy"]


def test_ec_node_args_reach_the_engines_node(videos, tmp_path, monkeypatch):
    # How the bench profiles the engine a Python process starts (EC_BENCH_NODE_ARGS="--cpu-prof …").
    if not str(os.environ["EC_ENGINE"]).endswith(".js"):
        pytest.skip("the engine is an installed `ec` command, not a bin/ec.js under node")
    monkeypatch.setenv("EC_NODE_ARGS", f"--cpu-prof --cpu-prof-dir={tmp_path / 'prof'}")
    with ec.open(str(videos), frames=8, batch=2, limit=2) as ds:
        assert sum(len(b.clips) for b in ds) == 2
    assert list((tmp_path / "prof").glob("*.cpuprofile"))
