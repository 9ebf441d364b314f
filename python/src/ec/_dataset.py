"""``ec.open``: a dataset streamed by the engine, batches as views of shared memory."""

from __future__ import annotations

import gc
import math
import os
import tempfile
from typing import Any, Callable, Dict, Iterator, List, Optional

import numpy as np

from ._engine import Engine
from ._errors import Error
from ._options import engine_options, python_names
from ._ring import SlotMaps

_torch: Any = None


def _load_torch() -> None:
    """Imports torch once, if it is installed (seconds of CPU: done while the engine opens, not in a batch)."""
    global _torch
    if _torch is None:
        try:
            import torch

            _torch = torch
        except ImportError:
            _torch = False


def _as_tensor(array: np.ndarray) -> Any:
    """A torch tensor over the same memory when torch is importable, else the array itself."""
    _load_torch()
    if _torch is False:
        return array
    try:
        return _torch.from_numpy(array)
    except TypeError:
        return array  # a dtype this torch has no tensor type for (e.g. uint16 before torch 2.3)


def _shm_dir() -> str:
    configured = os.environ.get("EC_SHM_DIR")
    if configured:
        return configured
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return "/dev/shm"
    return tempfile.gettempdir()


def _positive(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


class Batch:
    """One step's data: ``frames`` (a tensor, or an ndarray without torch) and ``clips`` (one dict per clip)."""

    __slots__ = ("frames", "clips", "pixel_format", "device")

    def __init__(self, frames: Any, clips: List[Dict[str, Any]], pixel_format: str, device: str) -> None:
        self.frames = frames
        self.clips = clips
        self.pixel_format = pixel_format
        self.device = device

    def pin_memory(self) -> "Batch":
        """For ``DataLoader(pin_memory=True)``: the frames copied into pinned memory (the shared slot is released)."""
        frames = self.frames.pin_memory() if hasattr(self.frames, "pin_memory") else self.frames
        return Batch(frames, self.clips, self.pixel_format, self.device)

    def __repr__(self) -> str:
        shape = tuple(getattr(self.frames, "shape", ()))
        return f"Batch(frames={type(self.frames).__name__}{list(shape)}, clips={len(self.clips)}, pixel_format={self.pixel_format!r})"


class _Batches:
    """The one iterator of a Dataset; an error (a full ring, say) leaves it usable."""

    __slots__ = ("_ds",)

    def __init__(self, ds: "Dataset") -> None:
        self._ds = ds

    def __iter__(self) -> "_Batches":
        return self

    def __next__(self) -> Batch:
        batch = self._ds._next()
        if batch is None:
            raise StopIteration
        return batch


class Dataset:
    """An opened dataset; iterate it once for batches. ``state()`` checkpoints, ``stats()`` reports."""

    def __init__(self, url: str, options: Dict[str, Any], engine: Optional[Engine] = None) -> None:
        if not isinstance(url, str):
            raise Error("ERR_INVALID_OPTION", f"Expected a dataset URL string but received {url!r}")
        wire, self._names, self._on_error = engine_options(options)
        device = options.get("device")
        self._cuda = isinstance(device, str) and device.startswith("cuda")
        self._device_name = device if self._cuda and ":" in str(device) else "cuda:0"
        if self._cuda:
            from . import _cuda

            _cuda.require_cuda(device)
        batch = _positive(options.get("batch"), 1)
        # The batches being decoded ahead (into their slots), the one in the user's hands, one more
        # for a batch the engine must copy, and one for the group the decoder starts next.
        slots = min(64, max(4, math.ceil(_positive(options.get("prefetch"), 8) / batch) + 3))
        self._engine: Optional[Engine] = None
        self._maps: Optional[SlotMaps] = None
        self._seq = 0
        self._ended = False
        self._failed: Optional[Error] = None
        self._iterated = False
        # An engine handed in (ClipDataset's, from epoch to epoch) outlives this dataset; one made here does not.
        self._owns_engine = engine is None
        self._engine = engine if engine is not None else Engine()
        self._id = self._engine.new_dataset()
        # The previous dataset's mappings on this engine (the last epoch's): the engine may hand its ring over again.
        kept, self._engine.kept_maps = self._engine.kept_maps, None
        try:
            self._engine.send(
                {"op": "open", "ds": self._id, "url": url, "options": wire, "slots": slots, "dir": _shm_dir(), "ipc": self._cuda, "keep": kept is not None}
            )
            # While the engine starts and opens: imported inside the first batch instead, torch kept the
            # engine's batches waiting for their acks (with every slot held, the engine stops decoding).
            _load_torch()
            while True:
                ev = self._event()
                if ev["event"] == "error":
                    self._report(ev)
                elif ev["event"] == "failed":
                    raise self._error(ev)
                elif ev["event"] == "opened":
                    break
            self.clip_count: int = ev["clips"]
            self.total_clips: int = ev["total"]
            paths = [s["path"] for s in ev["slots"]]
            if ev.get("kept") and kept is not None and len(kept) == len(paths):
                self._maps, kept = kept, None
                self._maps.renew(paths)
            else:
                self._maps = SlotMaps(paths)
            self._engine.send({"op": "mapped", "ds": self._id})
        except BaseException:
            self.close()
            raise
        finally:
            if kept is not None:
                kept.close()

    def _event(self) -> Dict[str, Any]:
        """The next event about this dataset (those of an earlier one on the same engine are dropped)."""
        assert self._engine is not None
        while True:
            ev = self._engine.next_event()
            if ev.get("ds", self._id) == self._id:
                if ev["event"] == "failed" and "ds" not in ev:
                    raise self._error(ev)  # the engine itself gave up
                return ev

    def _error(self, ev: Dict[str, Any]) -> Error:
        return Error(ev["code"], python_names(ev["message"], self._names))

    def _report(self, ev: Dict[str, Any]) -> None:
        if self._on_error is not None:
            self._on_error(ev["code"], ev["message"], ev.get("clip"))

    def __len__(self) -> int:
        return self.clip_count

    def __iter__(self) -> Iterator[Batch]:
        if self._iterated:
            raise Error("ERR_ALREADY_ITERATED", "A Dataset iterates once; ec.open() again (with resume) for more")
        self._iterated = True
        return _Batches(self)

    def _flush(self, wait: bool = False) -> None:
        assert self._engine is not None and self._maps is not None
        self._engine.send({"op": "ack", "ds": self._id, "seq": self._seq, "release": self._maps.take_released(wait)})

    def _next(self) -> Optional[Batch]:
        """The next batch, or None at the end of the stream."""
        if self._failed is not None:
            raise self._failed
        if self._ended or self._engine is None or self._maps is None:
            return None
        while True:
            self._flush()
            ev = self._event()
            kind = ev["event"]
            if kind == "batch":
                self._seq = ev["seq"]
                if ev.get("ipc"):
                    frames = self._maps.view_device(ev["slot"], ev["ipc"], ev["bytes"], ev["shape"], ev["dtype"], ev["device"])
                else:
                    frames = _as_tensor(self._maps.view(ev["slot"], ev["capacity"], ev["bytes"], ev["shape"], ev["dtype"]))
                    if self._cuda and hasattr(frames, "to"):
                        # Decoded on the CPU (e.g. AV1 where the GPU has no AV1 decoder): moved, so every batch is on the device.
                        frames = frames.to(self._device_name)
                return Batch(frames, ev["clips"], ev["pixel_format"], ev["device"])
            if kind == "error":
                self._report(ev)
            elif kind == "end":
                self._seq = ev["seq"]
                self._ended = True
                self._flush()
                return None
            elif kind == "full":
                # Slots the engine lent to batches being decoded come back without the user's help.
                if len(self._maps.held) - self._maps.pending() + ev.get("lent", 0) < len(self._maps):
                    self._flush(wait=True)  # a release is on its way (device slots: once their GPU work is done)
                    continue
                gc.collect()  # views kept alive only by reference cycles
                if self._maps.pending():
                    self._flush(wait=True)
                    continue
                raise Error(
                    "ERR_RING_FULL",
                    f"Expected a free shared-memory slot but all {len(self._maps)} hold batches still referenced; "
                    "keep a copy (frames.clone()) of batches you store, or raise prefetch for more slots",
                )
            elif kind == "failed":
                self._failed = self._error(ev)
                raise self._failed

    def state(self) -> Dict[str, Any]:
        """The JSON checkpoint of everything handed out so far (the same as the TypeScript ``state()``)."""
        return self._ask("state")

    def stats(self) -> Dict[str, Any]:
        """Counters so far, the same dict as ``ec stream --json``."""
        return self._ask("stats")

    def _ask(self, op: str) -> Any:
        if self._engine is None:
            raise Error("ERR_CLOSED", f"Expected an open dataset for {op}() but it is closed")
        if self._maps is not None:
            self._flush()
        return self._engine.request({"op": op, "ds": self._id, "seq": self._seq})

    def close(self) -> None:
        """Stops the engine and unmaps what no batch still uses. Safe to call twice."""
        engine, self._engine = self._engine, None
        maps, self._maps = self._maps, None
        if engine is not None:
            if self._owns_engine:
                engine.close()
            elif engine.usable():
                try:
                    if maps is not None and not self._cuda:
                        # Slots already let go are the ring's again before the next dataset takes it.
                        engine.send({"op": "ack", "ds": self._id, "seq": self._seq, "release": maps.take_released()})
                        engine.kept_maps, maps = maps, None
                    engine.send({"op": "reset"})
                except Error:
                    pass
        if maps is not None:
            maps.close()

    def __enter__(self) -> "Dataset":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def open(url: str, **options: Any) -> Dataset:  # noqa: A001 - the API's name
    """Opens a dataset for streaming; every option of the TypeScript ``open()``, snake_case.

    Example::

        ds = ec.open("http://127.0.0.1:8787/v1/datasets/gameplay", frames=16, size=(224, 224), batch=8)
        for batch in ds: train(batch.frames, batch.clips)
    """
    return Dataset(url, options)


def merge_checkpoints(checkpoints: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Unions the checkpoints of every rank of one run; the result resumes on any world size."""
    if not isinstance(checkpoints, (list, tuple)):
        raise Error("ERR_RESUME_INVALID", f"Expected a list of checkpoints but received {type(checkpoints).__name__}")
    engine = Engine()
    try:
        return engine.request({"op": "merge", "checkpoints": list(checkpoints)})
    finally:
        engine.close()
