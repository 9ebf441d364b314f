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
from typing import TYPE_CHECKING, Any, Dict, List, Sequence, Set, Tuple

from ._errors import Error

if TYPE_CHECKING:
    import numpy.typing as npt


def _open_slot(path: str) -> int:
    try:
        return os.open(path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise Error("ERR_SHM_UNAVAILABLE", f"Expected to open the engine's shared-memory slot {err.filename} but could not: {err.strerror}") from err


class SlotMaps:
    """Descriptors and mappings of the engine's slot files. Not thread-safe, except ``released``."""

    def __init__(self, paths: Sequence[str]) -> None:
        self._fds: List[int] = []
        self._paths = list(paths)
        # Bumped when a slot gets a new file (``renew``): releases of views of the old one are dropped.
        self._gen = [0] * len(self._paths)
        try:
            for p in paths:
                self._fds.append(_open_slot(p))
        except Error:
            self.close()
            raise
        self._maps: Dict[int, mmap.mmap] = {}
        self.held: Set[int] = set()  # slots handed out whose views are alive
        # (slot, the slot's file generation) of views gone: those of a slot renewed since are dropped.
        self.released: "collections.deque[Tuple[int, int]]" = collections.deque()
        # Device slots: released when their tensors die, handed back once the GPU work queued on them is done.
        self._device: Any = None
        self._device_released: "collections.deque[Tuple[int, int]]" = collections.deque()
        self._fenced: List[Tuple[int, Any]] = []

    def __len__(self) -> int:
        return len(self._fds)

    def renew(self, paths: Sequence[str]) -> None:
        """The engine's ring handed over again for the next dataset: slots under a new name are new
        files (their old ones were still held: those views keep their mapping, and their releases are dropped)."""
        for slot, path in enumerate(paths):
            if path == self._paths[slot]:
                continue
            fd = _open_slot(path)
            os.close(self._fds[slot])
            self._fds[slot], self._paths[slot] = fd, path
            self._gen[slot] += 1
            self._maps.pop(slot, None)
            self.held.discard(slot)

    def view(self, slot: int, capacity: int, nbytes: int, shape: Sequence[int], dtype: str) -> npt.NDArray[Any]:
        """A read-write array of the batch in ``slot``; the slot is released when its last view dies."""
        mm = self._maps.get(slot)
        if mm is None or len(mm) < capacity:
            # The engine grew the file for a larger batch; no view of the old mapping is alive (the slot was free).
            size = os.fstat(self._fds[slot]).st_size
            if size < capacity:
                # Mapped past its end, the file would fault (SIGBUS) where a view is read.
                raise Error("ERR_ENGINE_PROTOCOL", f"Expected slot {slot}'s file to hold the {capacity} bytes the ec engine said but it holds {size}")
            mm = mmap.mmap(self._fds[slot], capacity, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
            self._maps[slot] = mm
        import numpy as np  # loaded by the dataset's open; `import ec` alone does not pay for it

        dt = np.dtype(dtype)
        base = np.frombuffer(mm, dtype=dt, count=nbytes // dt.itemsize, offset=0)
        self.held.add(slot)
        weakref.finalize(base, self.released.append, (slot, self._gen[slot]))
        return base.reshape(tuple(shape))

    def view_device(self, slot: int, handle: bytes, shape: Sequence[int], dtype: str, device: str) -> Any:
        """A CUDA tensor over the engine's device memory for ``slot`` (CUDA IPC, no host copy)."""
        from . import _cuda

        if self._device is None:
            self._device = _cuda.DeviceSlots()
        pointer, index = self._device.pointer(slot, handle, device)
        tensor, holder = _cuda.tensor(pointer, index, shape, dtype)
        self.held.add(slot)
        weakref.finalize(holder, self._device_released.append, (slot, index))
        return tensor

    def pending(self) -> int:
        """Slots released here but not yet handed back to the engine."""
        return len(self.released) + len(self._device_released) + len(self._fenced)

    def take_released(self, wait: bool = False) -> List[int]:
        """Slots to hand back now; device slots once the work queued on them finished (``wait``: block for it)."""
        out: List[int] = []
        while self.released:
            slot, gen = self.released.popleft()
            if gen == self._gen[slot]:
                self.held.discard(slot)
                out.append(slot)
        if self._device_released or self._fenced:
            import torch

            while self._device_released:
                slot, index = self._device_released.popleft()
                fence = torch.cuda.Event()
                fence.record(torch.cuda.current_stream(index))
                self._fenced.append((slot, fence))
            still: List[Tuple[int, Any]] = []
            for slot, fence in self._fenced:
                if wait:
                    fence.synchronize()
                if fence.query():
                    self.held.discard(slot)
                    out.append(slot)
                else:
                    still.append((slot, fence))
            self._fenced = still
        return out

    def close(self) -> None:
        # Mappings still viewed by the user's arrays stay valid: they are unmapped when those die.
        self._maps = {}
        if self._device is not None:
            # Device tensors do not outlive the engine that owns their memory (CUDA IPC): clone those you keep.
            self._device.close()
            self._device = None
        for fd in self._fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds = []
