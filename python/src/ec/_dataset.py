"""``ec.open``: a dataset streamed by the engine, batches as views of shared memory."""

from __future__ import annotations

import gc
import importlib
import os
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Literal, Mapping, Optional, Sequence, Tuple, Union

from . import _protocol
from ._engine import Engine
from ._errors import Error, InvalidOptionTypeError, error_for
from ._options import check_options, describe, engine_options, python_names
from ._ring import SlotMaps
from ._types import Checkpoint, Clip, ErrorHandler

if TYPE_CHECKING:
    import numpy.typing as npt
    import torch

#: A batch's frames: a torch tensor over the shared slot (a CUDA tensor with ``device="cuda:N"``), or a
#: numpy array where torch is not installed (or has no tensor type for the dtype).
Frames = Union["torch.Tensor", "npt.NDArray[Any]"]

_torch: Any = None


def _load_torch() -> None:
    """Imports numpy, and torch once if it is installed (seconds of CPU): done while the engine opens,
    not in a batch, nor by ``import ec`` (a process that only imports ec, or starts no dataset, pays neither)."""
    global _torch
    importlib.import_module("numpy")  # the batches' arrays

    if _torch is None:
        try:
            import torch

            _torch = torch
        except ImportError:
            _torch = False


def _as_tensor(array: npt.NDArray[Any]) -> Frames:
    """A torch tensor over the same memory when torch is importable, else the array itself."""
    _load_torch()
    if _torch is False:
        return array
    try:
        tensor: Frames = _torch.from_numpy(array)
        return tensor
    except TypeError:
        return array  # a dtype this torch has no tensor type for (e.g. uint16 before torch 2.3)


def _tensor_of(frames: Frames) -> Optional[torch.Tensor]:
    """The frames as a tensor, or None where they are a numpy array (torch absent); numpy is loaded by then."""
    import numpy

    return None if isinstance(frames, numpy.ndarray) else frames


def _shm_dir() -> str:
    configured = os.environ.get("EC_SHM_DIR")
    if configured:
        return configured
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return "/dev/shm"
    import tempfile  # only where /dev/shm is not there: its imports cost a start-up the common case skips

    return tempfile.gettempdir()


class Batch:
    """One step's data, as the engine batched it.

    Attributes:
        frames: ``[B, T, H, W, 3]`` uint8 for rgb24 video, ``[B, T, bytes_per_frame]`` for
            ``format="native"``, ``[B, H, W, 3]`` for images, ``[B, *shape]`` for ``.npy`` arrays of
            their dtype. A view of shared memory: keep a copy (``frames.clone()``) of batches you store.
        clips: one ``Clip`` per row of ``frames``.
        pixel_format: the frames' pixel format (``"rgb24"``, or the decoder's with ``format="native"``).
        device: where the engine decoded them (``"cpu"`` or ``"cuda:N"``), also when they came through host memory.
    """

    __slots__ = ("frames", "clips", "pixel_format", "device")

    frames: Frames
    clips: List[Clip]
    pixel_format: str
    device: str

    def __init__(self, frames: Frames, clips: List[Clip], pixel_format: str, device: str) -> None:
        self.frames = frames
        self.clips = clips
        self.pixel_format = pixel_format
        self.device = device

    def pin_memory(self) -> Batch:
        """For ``DataLoader(pin_memory=True)``: the frames copied into pinned memory (the shared slot is released)."""
        tensor = _tensor_of(self.frames)
        frames = tensor.pin_memory() if tensor is not None else self.frames
        return Batch(frames, self.clips, self.pixel_format, self.device)

    def __repr__(self) -> str:
        shape = list(self.frames.shape)
        return f"Batch(frames={type(self.frames).__name__}{shape}, clips={len(self.clips)}, pixel_format={self.pixel_format!r})"


class _Batches:
    """The one iterator of a Dataset; an error (a full ring, say) leaves it usable."""

    __slots__ = ("_ds",)

    def __init__(self, ds: "Dataset") -> None:
        self._ds = ds

    def __iter__(self) -> "_Batches":
        return self

    def __next__(self) -> Batch:
        batch = self._ds._next()  # pyright: ignore[reportPrivateUsage] - the Dataset's own iterator
        if batch is None:
            raise StopIteration
        return batch


class Dataset:
    """An opened dataset (made by ``ec.open``); iterate it once for batches. ``state()`` checkpoints, ``stats()`` reports.

    Attributes:
        clip_count: clips this rank delivers in this run (``len(ds)``); None where it is not known
            until the epoch's end (a dataset table read page by page).
        total_clips: clips of the whole epoch, every rank's; None likewise.
    """

    clip_count: Optional[int]
    total_clips: Optional[int]

    def __init__(self, url: str, options: Mapping[str, Any], engine: Optional[Engine] = None) -> None:
        if not isinstance(url, str):  # pyright: ignore[reportUnnecessaryIsInstance] - callers without types
            raise InvalidOptionTypeError(f"Expected a dataset URL string but received {describe(url)}")
        wire, self._names, self._on_error = engine_options(options)
        device = options.get("device")
        self._cuda = isinstance(device, str) and device.startswith("cuda")
        self._device_name: str = device if isinstance(device, str) and self._cuda and ":" in device else "cuda:0"
        if self._cuda:
            from . import _cuda

            _cuda.require_cuda(self._device_name)
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
        kept: Optional[SlotMaps] = self._engine.kept_maps
        self._engine.kept_maps = None
        try:
            # The engine sizes the ring from the options it resolved (prefetch, batch) and lists its files in `opened`.
            self._engine.send({"op": "open", "ds": self._id, "url": url, "options": wire, "dir": _shm_dir(), "ipc": self._cuda, "keep": kept is not None})
            # While the engine starts and opens: imported inside the first batch instead, torch kept the
            # engine's batches waiting for their acks (with every slot held, the engine stops decoding).
            _load_torch()
            while True:
                ev = self._event()
                kind = ev.get("event")
                if kind == "error":
                    self._report(ev)
                elif kind == "failed":
                    raise self._error(ev)
                elif kind == "opened":
                    break
            opened = _protocol.opened(ev)
            self.clip_count = opened.clips
            self.total_clips = opened.total
            if opened.kept and kept is not None and len(kept) == len(opened.paths):
                self._maps, kept = kept, None
                self._maps.renew(opened.paths)
            else:
                self._maps = SlotMaps(opened.paths)
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
            assert ev is not None  # no timeout: an event, or the engine's end raised
            if ev.get("ds", self._id) == self._id:
                if ev.get("event") == "failed" and "ds" not in ev:
                    raise self._error(ev)  # the engine itself gave up
                return ev

    def _error(self, ev: Mapping[str, Any]) -> Error:
        failed = _protocol.failure(ev)
        return error_for(failed["code"], python_names(failed["message"], self._names))

    def _report(self, ev: Mapping[str, Any]) -> None:
        if self._on_error is not None:
            failed = _protocol.failure(ev)
            self._on_error(failed["code"], failed["message"], ev.get("clip"))

    def __len__(self) -> int:
        if self.clip_count is None:
            # len() must be an int: an unknown count is said, never a made-up one.
            raise TypeError(
                "This Dataset's clip count is not known until its epoch ends (its table's pages are read "
                "as the epoch reaches them): clip_count is None; iterate it instead of taking len()"
            )
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
            kind = ev.get("event")
            if kind == "batch":
                try:
                    b = _protocol.batch(ev, self._seq, len(self._maps), self._cuda)
                    frames: Frames
                    if b.ipc is not None:
                        frames = self._maps.view_device(b.slot, b.ipc, b.shape, b.dtype, b.device)
                    else:
                        frames = _as_tensor(self._maps.view(b.slot, b.capacity, b.nbytes, b.shape, b.dtype))
                except Error as err:
                    if err.code == _protocol.PROTOCOL:
                        self._failed = err  # an engine out of protocol is not trusted with another batch
                    raise
                self._seq = b.seq
                tensor = _tensor_of(frames)
                if self._cuda and tensor is not None and b.ipc is None:
                    # Decoded on the CPU (e.g. AV1 where the GPU has no AV1 decoder): moved, so every batch is on the device.
                    frames = tensor.to(self._device_name)
                return Batch(frames, b.clips, b.pixel_format, b.device)
            if kind == "error":
                self._report(ev)
            elif kind == "end":
                self._seq = _protocol.end(ev, self._seq)
                self._ended = True
                self._flush()
                return None
            elif kind == "full":
                # Slots the engine lent to batches being decoded come back without the user's help.
                if len(self._maps.held) - self._maps.pending() + _protocol.full(ev) < len(self._maps):
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


def open(  # noqa: A001 - the API's name
    url: str,
    *,
    frames: int = 16,
    stride: int = 1,
    hop: Optional[int] = None,
    align: Literal["keyframe", "exact"] = "exact",
    size: Optional[Tuple[int, int]] = None,
    format: Literal["rgb24", "native"] = "rgb24",  # noqa: A002 - the engine's name
    rotate: Literal["none", "auto"] = "none",
    track: int = 0,
    limit: Optional[int] = None,
    labels: Union[bool, Sequence[str], Mapping[str, Any], None] = None,
    filter: Optional[Literal["drop", "tag"]] = None,  # noqa: A002 - the engine's name
    token: Optional[str] = None,
    edge_keys: Union[Sequence[str], Mapping[str, Any], None] = None,
    cache: Optional[str] = None,
    cache_local: Optional[bool] = None,
    cache_bytes: int = 268435456,
    seed: Optional[int] = None,
    epoch: Optional[int] = None,
    shuffle: Union[str, Literal[False]] = "shard-buffer",
    shuffle_buffer: int = 256,
    rank: Optional[int] = None,
    world: Optional[int] = None,
    batch: int = 1,
    drop_last: bool = False,
    prefetch: int = 8,
    workers: Optional[int] = None,
    device: str = "auto",
    table_cache_bytes: int = 67108864,
    resume: Union[Checkpoint, Sequence[Checkpoint], None] = None,
    endpoint: Optional[str] = None,
    region: Optional[str] = None,
    credentials: Optional[Mapping[str, str]] = None,
    force_path_style: Optional[bool] = None,
    on_error: Optional[ErrorHandler] = None,
) -> Dataset:
    """Opens a dataset for streaming: the engine validates the options, lists the dataset and plans this rank's clips.

    Every option is the TypeScript ``open()``'s, snake_case, with the same default; None leaves an
    option to the engine's default (for those marked so below, one that is no constant).

    Example::

        ds = ec.open("http://127.0.0.1:8787/v1/datasets/gameplay", frames=16, size=(224, 224), batch=8)
        for batch in ds: train(batch.frames, batch.clips)

    Args:
        url: The dataset: ``https://EDGE/v1/datasets/PREFIX``, ``r2://ACCOUNT/BUCKET/PREFIX``, ``s3://BUCKET/PREFIX`` or a local folder (its absolute path or a ``file://`` URL).
        frames: Frames per clip.
        stride: Step between consecutive frames of a clip (1: every frame).
        hop: Frames between clip starts; None: the clip's span, so clips do not overlap.
        align: "exact": a clip every ``hop`` frames, every frame covered; "keyframe": clips only on keyframes.
        size: Output ``(height, width)``; None: the video's own size.
        format: "rgb24": uint8 ``[B, T, H, W, 3]``; "native": the decoder's pixel format, unconverted ``[B, T, bytes]``.
        rotate: "none": frames as coded; "auto": turned upright by the video's rotation, as ffmpeg's autorotate does.
        track: Which video track of objects with several (0-based, among tracks of a supported codec).
        limit: At most this many clips for this rank; None: every clip.
        labels: Labelers to run: True (every built-in), a list of names, or a dict of name to settings; None: none.
        filter: With labelers, "drop" (the default: clips failing validation are dropped) or "tag" (keep all).
        token: Bearer token for the edge; None: the ``EC_TOKEN`` environment variable.
        edge_keys: The edge's Ed25519 public keys (base64url, as ``ec keys URL`` prints them, or its /v1/keys document); None: ``EC_EDGE_KEYS``, else the keys first seen for the edge.
        cache: The host's origin-cache URL (e.g. ``http://127.0.0.1:7070``); None: an in-process cache.
        cache_local: With a loopback ``cache``, read its hits from its slab files directly; None: on unless ``EC_CACHE_LOCAL=0``.
        cache_bytes: The in-process cache's budget in bytes (only without ``cache``).
        seed: Seed of the epoch order; None: 0, or the checkpoint's with ``resume``.
        epoch: Which epoch's order to stream; None: 0, or the checkpoint's with ``resume``.
        shuffle: A registered shuffle ("shard-buffer", "global", "none") or False.
        shuffle_buffer: Clips the "shard-buffer" shuffle mixes at a time.
        rank: This process's rank; None: ``RANK``, else 0.
        world: How many ranks share the epoch; None: ``WORLD_SIZE``, else 1.
        batch: Clips per batch.
        drop_last: Drop a last, smaller batch.
        prefetch: Clips fetched and decoded ahead of the loop: the memory bound (the engine sizes the shared-memory ring from it).
        workers: Clips decoded in parallel; None: the machine's cores.
        device: "cpu", "auto" (the GPU where one decodes, batches through host memory) or "cuda:N" (CUDA tensors that stay on the device).
        table_cache_bytes: Bytes of the dataset table's pages and directory pages held at once where the table is read page by page; over it the least recently used are read again when needed (``stats()["table_cache"]`` counts them); too small for a window of pages is ``ERR_TABLE_CACHE_TOO_SMALL``.
        resume: A checkpoint from ``Dataset.state()``, or the checkpoints of every rank: continues exactly where they stopped.
        endpoint: r2:// and s3:// only: the S3 API endpoint; None: ``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``, else AWS S3.
        region: r2:// and s3:// only: the signing region; None: ``AWS_REGION``, else "auto" for R2 and "us-east-1" elsewhere.
        credentials: r2:// and s3:// only: ``{"access_key_id", "secret_access_key", "session_token"}``; None: from the environment.
        force_path_style: r2:// and s3:// only: path-style addressing; None: on for any endpoint but AWS's own.
        on_error: ``on_error(code, message, clip)``, called once per skipped object or clip; the stream goes on.

    Returns:
        The ``Dataset``: iterate it once for ``Batch`` es; ``close()`` it, or open it in a ``with``.

    Raises:
        InvalidOptionTypeError: An option of the wrong type (a ``TypeError`` and an ``InvalidOptionError``), before the engine starts.
        InvalidOptionError: An option the engine refuses (``ERR_INVALID_OPTION``, a ``ValueError``), before any I/O.
        Error: The dataset cannot be streamed (``ERR_NO_CLIPS``, ``ERR_DATASET_NOT_FOUND``, ``ERR_ENGINE_NOT_FOUND``, ...).
    """
    options = dict(locals())
    del options["url"]
    check_options(open, options)
    return Dataset(url, options)


def merge_checkpoints(checkpoints: Sequence[Checkpoint]) -> Dict[str, Any]:
    """Unions the checkpoints of every rank of one run; the result resumes on any world size.

    Args:
        checkpoints: Every rank's ``Dataset.state()`` (or ``ClipDataset.state_dict()["checkpoint"]``).

    Returns:
        One checkpoint, for ``resume`` on any world size.

    Raises:
        Error: ``ERR_RESUME_INVALID`` (or ``ERR_RESUME_MISMATCH``) for checkpoints that are not of one run.
    """
    if not isinstance(checkpoints, (list, tuple)):
        raise Error("ERR_RESUME_INVALID", f"Expected a list of checkpoints but received {type(checkpoints).__name__}")
    engine = Engine()
    try:
        return engine.request({"op": "merge", "checkpoints": list(checkpoints)})
    finally:
        engine.close()
