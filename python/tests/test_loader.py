"""ClipDataset in a real DataLoader: every clip once, disjoint ranks, exact resume."""

from __future__ import annotations

import pytest
from torch.utils.data import DataLoader

import ec
import ec.torch
from conftest import md5

OPTS = dict(frames=4, hop=4, align="exact", size=(32, 32), batch=3, seed=7)


def clips_of(batches):
    return [(c["key"], c["start"]) for b in batches for c in b.clips]


def epoch(videos, **extra):
    with ec.open(str(videos), **{**OPTS, **extra}) as ds:
        return clips_of(ds)


@pytest.mark.parametrize("workers", [0, 2])
def test_dataloader_delivers_every_clip_of_the_epoch_once(videos, workers):
    want = epoch(videos)
    ds = ec.torch.ClipDataset(str(videos), **OPTS)
    got = clips_of(DataLoader(ds, batch_size=None, num_workers=workers))
    assert len(got) == len(set(got)) == len(want)
    assert set(got) == set(want)


def test_dataloader_through_the_edge_and_cache(stack):
    ds = ec.torch.ClipDataset(stack["url"], token=stack["token"], cache=stack["cache"], frames=4, batch=2)
    got = clips_of(DataLoader(ds, batch_size=None, num_workers=0))
    assert len(got) == len(set(got)) > 0


def test_two_ranks_are_disjoint_and_cover_the_epoch(videos, monkeypatch):
    want = set(epoch(videos))
    shares = []
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        shares.append(set(clips_of(DataLoader(ec.torch.ClipDataset(str(videos), **OPTS), batch_size=None))))
    assert shares[0] and shares[1] and not (shares[0] & shares[1])
    assert shares[0] | shares[1] == want


def test_state_dict_after_k_batches_resumes_exactly(videos):
    want = epoch(videos)
    ds = ec.torch.ClipDataset(str(videos), **OPTS)
    first = []
    for k, batch in enumerate(DataLoader(ds, batch_size=None)):
        first += clips_of([batch])
        if k == 2:
            sd = ds.state_dict()
            break
    fresh = ec.torch.ClipDataset(str(videos), **OPTS)
    fresh.load_state_dict(sd)
    rest = clips_of(DataLoader(fresh, batch_size=None))
    assert len(first) + len(rest) == len(want)
    assert sorted(first + rest) == sorted(want)


def test_checkpoints_of_two_ranks_resume_on_one(videos):
    want = epoch(videos)
    taken, states = [], []
    for rank in (0, 1):
        with ec.open(str(videos), **OPTS, rank=rank, world=2) as ds:
            it = iter(ds)
            taken += clips_of([next(it), next(it)])
            states.append(ds.state())
    merged = ec.merge_checkpoints(states)
    assert merged["ranks"] == [0, 1]
    with ec.open(str(videos), **OPTS, resume=merged) as ds:
        rest = clips_of(ds)
    assert sorted(taken + rest) == sorted(want) and len(taken + rest) == len(want)
    # Also straight from the list, as the TypeScript open() takes it.
    with ec.open(str(videos), **OPTS, resume=states) as ds:
        assert sorted(clips_of(ds)) == sorted(rest)


def test_set_epoch_changes_the_order(videos):
    ds = ec.torch.ClipDataset(str(videos), **OPTS)
    ds.set_epoch(0)
    e0 = clips_of(DataLoader(ds, batch_size=None))
    ds.set_epoch(1)
    e1 = clips_of(DataLoader(ds, batch_size=None))
    assert sorted(e0) == sorted(e1) and e0 != e1


def test_state_dict_refuses_with_workers(videos):
    ds = ec.torch.ClipDataset(str(videos), **OPTS)
    for _ in DataLoader(ds, batch_size=None, num_workers=2):
        break
    with pytest.raises(ec.Error) as err:
        ds.state_dict()
    assert err.value.code == "ERR_STATE_UNAVAILABLE"


def test_batches_pass_pin_memory_through(videos):
    b = next(iter(DataLoader(ec.torch.ClipDataset(str(videos), **OPTS), batch_size=None)))
    assert isinstance(b, ec.Batch) and md5(b.frames.numpy()) == md5(b.frames.clone().numpy())


def test_one_engine_serves_every_epoch_of_a_clip_dataset(videos):
    ds = ec.torch.ClipDataset(str(videos), **OPTS)
    pids = []
    for e in range(3):
        ds.set_epoch(e)
        for i, batch in enumerate(DataLoader(ds, batch_size=None)):
            pids.append(ds._engine.pid)
            if e == 1 and i == 1:
                break  # an epoch left early: the engine drops it and serves the next
    assert len(set(pids)) == 1
    again = clips_of(DataLoader(ds, batch_size=None))
    assert sorted(again) == sorted(epoch(videos, epoch=2))
    ds.close()


def test_the_ring_is_kept_from_epoch_to_epoch_and_a_kept_batch_stays_intact(videos):
    ds = ec.torch.ClipDataset(str(videos), **OPTS)
    rings, seen = [], []
    for e in range(3):
        ds.set_epoch(e)
        for i, batch in enumerate(DataLoader(ds, batch_size=None)):
            rings.append(id(ds._live._maps))
            seen.append(md5(batch.frames.numpy()))
            if e == 0 and i == 0:
                held, copy = batch.frames, batch.frames.clone()
    # One ring for every epoch (its shared-memory pages are faulted in once), and a batch kept from
    # the first epoch is still what it was after two more epochs went through the same slots.
    assert len(set(rings)) == 1
    assert bool((held == copy).all())
    again = clips_of(DataLoader(ds, batch_size=None))
    assert sorted(again) == sorted(epoch(videos, epoch=2))
    ds.close()


def test_a_ring_of_another_size_is_made_anew(videos):
    from ec._dataset import Dataset
    from ec._engine import Engine

    engine = Engine()
    try:
        small = Dataset(str(videos), {**OPTS, "prefetch": 1, "batch": 1}, engine=engine)
        first = clips_of(small)
        small_maps = small._maps
        small.close()
        big = Dataset(str(videos), {**OPTS, "prefetch": 16, "batch": 1}, engine=engine)
        assert big._maps is not small_maps and len(big._maps) != len(small_maps)
        assert sorted(clips_of(big)) == sorted(first)
        big.close()
    finally:
        engine.close()
