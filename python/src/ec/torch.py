"""``ec.torch.ClipDataset``: an ``IterableDataset`` for ``DataLoader(ds, batch_size=None)``.

Batches are already batched (``batch=``), so the loader passes them through. Rank and world come
from ``torch.distributed`` when it is initialized, else ``RANK``/``WORLD_SIZE``; each DataLoader
worker takes a disjoint share (worker i of n is sub-rank i). ``state_dict()``/``load_state_dict()``
resume exactly; ``set_epoch(n)`` changes the epoch order.
"""

from __future__ import annotations

import multiprocessing
import os
from typing import Any, Dict, Iterator, Optional, Tuple

import torch.distributed as dist
import torch.utils.data as tud

from ._dataset import Batch, Dataset
from ._engine import Engine
from ._errors import Error

__all__ = ["ClipDataset"]


def _env_share() -> Tuple[Optional[int], Optional[int]]:
    """RANK and WORLD_SIZE when they are whole numbers; otherwise the engine reports them."""
    out = []
    for name in ("RANK", "WORLD_SIZE"):
        raw = os.environ.get(name, "")
        out.append(int(raw) if raw.isdigit() else None)
    return out[0], out[1]


class ClipDataset(tud.IterableDataset):
    """ec's stream for a DataLoader. Each ``iter()`` opens one engine for this process's share.

    Example::

        ds = ec.torch.ClipDataset(url, frames=16, size=(224, 224), batch=8)
        for batch in DataLoader(ds, batch_size=None): train(batch.frames, batch.clips)
    """

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__()
        self.url = url
        self._epoch: Optional[int] = options.pop("epoch", None)
        self._resume: Any = options.pop("resume", None)
        self._options = options
        self._live: Optional[Dataset] = None
        # One engine per process, kept from epoch to epoch: its start-up is paid once, not per iter().
        self._engine: Optional[Engine] = None
        self._last_state: Optional[Dict[str, Any]] = None
        # Set by DataLoader workers (shared across fork and spawn): the main process then knows its own view is not the loop's.
        self._in_workers = multiprocessing.Value("b", 0, lock=False)

    def _share(self) -> Dict[str, Any]:
        rank, world = self._options.get("rank"), self._options.get("world")
        if rank is None and world is None:
            if dist.is_available() and dist.is_initialized():
                rank, world = dist.get_rank(), dist.get_world_size()
            else:
                rank, world = _env_share()
        info = tud.get_worker_info()
        if info is not None:
            self._in_workers.value = 1
        if info is None or info.num_workers == 1:
            return {"rank": rank, "world": world}
        rank = 0 if rank is None else rank
        world = 1 if world is None else world
        if not isinstance(rank, int) or not isinstance(world, int):
            return {"rank": rank, "world": world}  # the engine says what is wrong
        return {"rank": rank * info.num_workers + info.id, "world": world * info.num_workers}

    # Whether the last iter() ran to the end of its share (then _last_state is that end).
    _ended = False

    def __iter__(self) -> Iterator[Batch]:
        opts = {**self._options, **self._share()}
        if self._resume is not None:
            opts["resume"] = self._resume
        if self._epoch is not None:
            opts["epoch"] = self._epoch
        if self._engine is None or not self._engine.usable():
            self._engine = Engine()
        ds = Dataset(self.url, opts, engine=self._engine)
        # A resume serves one iter(): the next one streams a whole epoch, as after an uninterrupted one.
        self._live, self._resume, self._last_state, self._ended = ds, None, None, False
        try:
            yield from ds
            self._ended = True
        finally:
            self._live = None
            try:
                # Also when the loop left early: a state_dict() after it still counts what was taken.
                self._last_state = ds.state()
            except Error:
                pass
            ds.close()

    def state_dict(self) -> Dict[str, Any]:
        """Where this process's stream stands: ``{"checkpoint": …, "epoch": …, "ended": …}``, for ``load_state_dict``.

        Exact with ``num_workers=0`` (the engine already decodes on every core), and with workers
        under torchdata's ``StatefulDataLoader``, which calls it in each worker as the worker yields
        and keeps, per worker, the state of the batches the loop took: a worker's checkpoint is its
        sub-rank's, which resumes that sub-rank alone. With a plain DataLoader's workers the main
        process cannot see which prefetched batches the loop took, so it raises
        ``ERR_STATE_UNAVAILABLE`` rather than return a checkpoint that would repeat or lose clips.
        """
        if tud.get_worker_info() is None and self._in_workers.value:
            raise Error(
                "ERR_STATE_UNAVAILABLE",
                "Expected a DataLoader with num_workers=0 for an exact state_dict() but this dataset is iterated by "
                "worker processes, whose prefetched batches the main process cannot see; use num_workers=0 "
                "(ec's engine decodes in parallel on its own), or torchdata's StatefulDataLoader, which keeps "
                "each worker's state_dict() of the batches the loop took",
            )
        if self._live is not None:
            return {"checkpoint": self._live.state(), "epoch": self._epoch, "ended": False}
        checkpoint = self._last_state if self._last_state is not None else self._resume
        return {"checkpoint": checkpoint, "epoch": self._epoch, "ended": self._ended}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Resumes from ``state_dict()``: the next ``iter()`` delivers exactly the clips not yet delivered.

        The state of an epoch that ran to its end makes the next ``iter()`` a whole epoch (the one
        ``set_epoch`` says), as it would have been without the restart; in a DataLoader worker it
        resumes that worker's finished share instead (nothing left), as its loader expects.
        """
        if not isinstance(state, dict) or "checkpoint" not in state:
            raise Error("ERR_RESUME_INVALID", f"Expected a ClipDataset.state_dict() but received {state!r:.200}")
        self._last_state, self._ended = None, False
        if state.get("ended") and tud.get_worker_info() is None:
            self._resume = None
            return
        self._resume = state["checkpoint"]
        self._epoch = state.get("epoch", self._epoch)

    def close(self) -> None:
        """Stops this process's engine (it also stops when the process exits)."""
        engine, self._engine = self._engine, None
        if engine is not None and engine.owner_pid == os.getpid():
            engine.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __getstate__(self) -> Dict[str, Any]:
        # Spawned DataLoader workers get a copy without this process's engine; they start their own.
        state = self.__dict__.copy()
        state["_engine"] = None
        state["_live"] = None
        return state

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch the next ``iter()`` streams (its own order); a checkpoint of another epoch is dropped."""
        if self._resume is not None and isinstance(self._resume, dict) and self._resume.get("epoch") != epoch:
            self._resume = None
        self._epoch = epoch
        self._last_state, self._ended = None, False
