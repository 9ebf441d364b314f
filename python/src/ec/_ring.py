"""The client's side of the shared-memory ring: each slot file mapped once, batches as views of it.

A slot goes back to the engine only when every array or tensor over it is gone (a finalizer on
the view's base array, which every numpy view and ``torch.from_numpy`` tensor keeps alive), so a
batch the user still holds is never overwritten. Finalizers only queue the slot; the releases are
sent with the next request, never from inside the garbage collector.
"""

from __future__ import annotations

import collections
import mmap
import os
import weakref
from typing import Dict, List, Sequence

import numpy as np

from ._errors import Error


class SlotMaps:
    """Descriptors and mappings of the engine's slot files. Not thread-safe, except ``released``."""

    def __init__(self, paths: Sequence[str]) -> None:
        self._fds: List[int] = []
        try:
            for p in paths:
                self._fds.append(os.open(p, os.O_RDWR | getattr(os, "O_CLOEXEC", 0)))
        except OSError as err:
            self.close()
            raise Error("ERR_SHM_UNAVAILABLE", f"Expected to open the engine's shared-memory slot {err.filename} but could not: {err.strerror}") from err
        self._maps: Dict[int, mmap.mmap] = {}
        self.held = set()  # slots handed out whose views are alive
        self.released: "collections.deque[int]" = collections.deque()

    def __len__(self) -> int:
        return len(self._fds)

    def view(self, slot: int, capacity: int, nbytes: int, shape: Sequence[int], dtype: str) -> np.ndarray:
        """A read-write array of the batch in ``slot``; the slot is released when its last view dies."""
        mm = self._maps.get(slot)
        if mm is None or len(mm) < capacity:
            # The engine grew the file for a larger batch; no view of the old mapping is alive (the slot was free).
            mm = mmap.mmap(self._fds[slot], capacity, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
            self._maps[slot] = mm
        dt = np.dtype(dtype)
        base = np.frombuffer(mm, dtype=dt, count=nbytes // dt.itemsize, offset=0)
        self.held.add(slot)
        weakref.finalize(base, self.released.append, slot)
        return base.reshape(tuple(shape))

    def take_released(self) -> List[int]:
        out = []
        while True:
            try:
                slot = self.released.popleft()
            except IndexError:
                return out
            self.held.discard(slot)
            out.append(slot)

    def close(self) -> None:
        # Mappings still viewed by the user's arrays stay valid: they are unmapped when those die.
        self._maps = {}
        for fd in self._fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds = []
