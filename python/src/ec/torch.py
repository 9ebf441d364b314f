"""``ec.torch.ClipDataset``: an ``IterableDataset`` for ``DataLoader(ds, batch_size=None)``.

Batches are already batched (``batch=``), so the loader passes them through. Rank and world come
from ``torch.distributed`` when it is initialized, else ``RANK``/``WORLD_SIZE``; each DataLoader
worker takes a disjoint share (worker i of n is sub-rank i). ``state_dict()``/``load_state_dict()``
resume exactly; ``set_epoch(n)`` changes the epoch order.
"""

from __future__ import annotations

import multiprocessing
import os
from typing import Any, Dict, Iterator, List, Literal, Mapping, Optional, Sequence, Tuple, Union

import torch.distributed as dist
import torch.utils.data as tud

from ._dataset import Batch, Dataset
from ._engine import Engine
from ._errors import Error
from ._options import check_options
from ._types import Checkpoint, ErrorHandler

__all__ = ["ClipDataset"]


def _env_share() -> Tuple[Optional[int], Optional[int]]:
    """RANK and WORLD_SIZE when they are whole numbers; otherwise the engine reports them."""
    out: List[Optional[int]] = []
    for name in ("RANK", "WORLD_SIZE"):
        raw = os.environ.get(name, "")
        out.append(int(raw) if raw.isdigit() else None)
    return out[0], out[1]


class ClipDataset(tud.IterableDataset):  # pyright: ignore[reportMissingTypeArgument] - torch < 2 has no generic IterableDataset
    """ec's stream for a DataLoader. Each ``iter()`` opens this process's share on one engine kept from epoch to epoch.

    Example::

        ds = ec.torch.ClipDataset(url, frames=16, size=(224, 224), batch=8)
        for batch in DataLoader(ds, batch_size=None): train(batch.frames, batch.clips)
    """

    def __init__(
        self,
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
    ) -> None:
        """Takes every option of ``ec.open``, with the same defaults; nothing is opened before ``iter()``.

        Unlike ``ec.open``, rank and world come from ``torch.distributed`` when it is initialized (else
        ``RANK``/``WORLD_SIZE``), and each DataLoader worker takes a disjoint share of them.

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

        Raises:
            InvalidOptionTypeError: An option of the wrong type (a ``TypeError``); the engine checks the values at ``iter()``.
        """
        options: Dict[str, Any] = dict(locals())
        for name in ("self", "url", "__class__"):
            options.pop(name, None)
        check_options(ClipDataset.__init__, options)
        super().__init__()
        self.url = url
        self._epoch: Optional[int] = options.pop("epoch")
        self._resume: Union[Checkpoint, Sequence[Checkpoint], None] = options.pop("resume")
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
        info: Any = tud.get_worker_info()  # torch < 2 types none of its fields
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

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
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
