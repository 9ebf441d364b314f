"""ClipDataset under torchdata's StatefulDataLoader: exact resume with 0 and 2 workers.

Every restart below takes the loader's state_dict(), hands it to a fresh loader over a fresh
ClipDataset (a new process would do the same) and checks that the batches after it are exactly
those the uninterrupted loader delivered: nothing lost, nothing twice, in the same order.
torchdata needs torch >= 2: `node scripts/test-python.mjs` runs this file with the environment
that scripts/torch2-env.mjs makes.
"""

from __future__ import annotations

import os
import pickle

import pytest

try:
    from torchdata.stateful_dataloader import StatefulDataLoader
except ImportError:
    if os.environ.get("CI") == "true":
        raise
    pytest.skip("torchdata (torch >= 2) is not installed here; scripts/test-python.mjs runs it", allow_module_level=True)

import ec
import ec.torch

OPTS = dict(frames=4, hop=4, align="exact", size=(32, 32), batch=3, seed=7)
WORKERS = [0, 2]


def clips_of(batch):
    return [(c["key"], c["start"]) for c in batch.clips]


def loader(videos, workers, epoch=None):
    ds = ec.torch.ClipDataset(str(videos), **OPTS)
    if epoch is not None:
        ds.set_epoch(epoch)
    return ds, StatefulDataLoader(ds, batch_size=None, num_workers=workers)


def batches(dl, stop=None):
    """Each batch's clips; with ``stop``, the loader's state_dict() after that many batches too."""
    out, state = [], None
    for batch in dl:
        out.append(clips_of(batch))
        if len(out) == stop:
            state = dl.state_dict()
            break
    return out, state


def restored(videos, workers, state, epoch=None):
    """A fresh dataset and loader from a state that went through pickle, as torch.save does."""
    ds, dl = loader(videos, workers)
    dl.load_state_dict(pickle.loads(pickle.dumps(state)))
    if epoch is not None:
        ds.set_epoch(epoch)
    return ds, dl


def flat(bs):
    return [c for b in bs for c in b]


@pytest.fixture(scope="module")
def epoch_clips(videos):
    with ec.open(str(videos), **OPTS) as ds:
        return sorted(c for b in ds for c in clips_of(b))


@pytest.mark.parametrize("workers", WORKERS)
def test_resume_after_k_batches_delivers_the_rest_of_the_epoch_exactly(videos, workers, epoch_clips):
    whole, _ = batches(loader(videos, workers)[1])
    assert sorted(flat(whole)) == epoch_clips
    for k in (1, 4):
        first, state = batches(loader(videos, workers)[1], stop=k)
        rest, _ = batches(restored(videos, workers, state)[1])
        assert first + rest == whole, f"resumed after {k} batches"
    # A resumed run checkpoints and resumes again.
    first, state = batches(loader(videos, workers)[1], stop=2)
    second, state = batches(restored(videos, workers, state)[1], stop=3)
    rest, _ = batches(restored(videos, workers, state)[1])
    assert first + second + rest == whole
    if workers:
        # Each worker's checkpoint is its sub-rank's: merged, they resume on any world size.
        snapshots = state["_snapshot"]["_worker_snapshots"]
        merged = ec.merge_checkpoints([snapshots[f"worker_{i}"]["dataset_state"]["checkpoint"] for i in range(workers)])
        assert merged["ranks"] == list(range(workers)) and merged["count"] == len(flat(first + second))
        with ec.open(str(videos), **OPTS, resume=merged) as ds:
            assert sorted(flat(first + second) + [c for b in ds for c in clips_of(b)]) == epoch_clips


@pytest.mark.parametrize("workers", WORKERS)
def test_a_checkpoint_at_the_epoch_boundary_keeps_the_next_epoch(videos, workers, epoch_clips):
    ds, dl = loader(videos, workers)
    whole, _ = batches(dl)
    # Taken after the loop ran out: the restored loader's next iteration is a whole epoch.
    _, dl2 = restored(videos, workers, dl.state_dict())
    assert batches(dl2)[0] == whole
    assert batches(dl2)[0] == whole
    # Taken inside the loop, at the last batch: what is left of that epoch is nothing, then a whole one.
    _, state = batches(loader(videos, workers)[1], stop=len(whole))
    _, dl3 = restored(videos, workers, state)
    assert batches(dl3)[0] == []
    assert batches(dl3)[0] == whole
    assert sorted(flat(whole)) == epoch_clips


@pytest.mark.parametrize("workers", WORKERS)
def test_resume_across_set_epoch(videos, workers, epoch_clips):
    ds, dl = loader(videos, workers)
    ds.set_epoch(0)
    e0, _ = batches(dl)
    ds.set_epoch(1)
    first, state = batches(dl, stop=3)
    e1, _ = batches(loader(videos, workers, epoch=1)[1])
    e2, _ = batches(loader(videos, workers, epoch=2)[1])
    assert flat(e1) != flat(e0) and sorted(flat(e1)) == sorted(flat(e2)) == epoch_clips
    # The restarted job sets the epoch it was in, as its loop does, then goes on with the next.
    ds2, dl2 = restored(videos, workers, state, epoch=1)
    rest, _ = batches(dl2)
    assert first + rest == e1
    ds2.set_epoch(2)
    assert batches(dl2)[0] == e2
    # The state of a finished epoch, restored where the loop sets the next epoch: that whole epoch.
    _, dl3 = restored(videos, workers, dl2.state_dict(), epoch=3)
    e3, _ = batches(loader(videos, workers, epoch=3)[1])
    assert batches(dl3)[0] == e3 and sorted(flat(e3)) == epoch_clips


def test_ranks_with_workers_resume_each_from_its_own_loader_state(videos, monkeypatch, epoch_clips):
    """Two ranks of two workers (sub-ranks 0..3 of 4), each restarted from its own loader state alone."""
    taken, states = [], []
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        first, state = batches(loader(videos, 2)[1], stop=rank + 2)
        taken += flat(first)
        states.append(state)
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        taken += flat(batches(restored(videos, 2, states[rank])[1])[0])
    assert sorted(taken) == epoch_clips
