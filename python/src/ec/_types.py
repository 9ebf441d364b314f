"""The shapes the engine hands over, as types: a batch's clips, the clip an error is about, a checkpoint."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Literal, Mapping, Optional, TypedDict

__all__ = ["Clip", "ClipSource", "ErrorClip", "ErrorHandler", "Checkpoint"]


class ClipSource(TypedDict):
    """The source video or image as its index describes it (as coded: before resize or rotation)."""

    width: int
    height: int
    fps: float
    duration: float


class _ClipRequired(TypedDict):
    key: str
    start: int
    frames: int
    stride: int
    pts: List[float]
    position: int
    labels: Dict[str, Any]


class Clip(_ClipRequired, total=False):
    """One clip of a batch, the engine's ``ClipInfo`` (``sdk/clip-info.ts``) as it sends it.

    Always there: ``key`` (the object's key), ``start`` (0-based index of the first frame),
    ``frames``, ``stride``, ``pts`` (seconds, one per frame), ``position`` (in the epoch's order),
    ``labels`` (what the labelers said; empty without them). Where known: ``etag``, ``rotation``
    (0, 90, 180 or 270 degrees clockwise to display upright), ``source`` (a ``ClipSource``).
    """

    etag: str
    rotation: Literal[0, 90, 180, 270]
    source: ClipSource


class ErrorClip(TypedDict):
    """The clip a skipped-clip error is about: its object's key and first frame."""

    key: str
    start: int


#: ``on_error(code, message, clip)``: called once per skipped object or clip (``clip`` is None for an object).
ErrorHandler = Callable[[str, str, Optional[ErrorClip]], object]
#: The JSON checkpoint of ``Dataset.state()`` (the same as the TypeScript ``ds.state()``).
Checkpoint = Mapping[str, Any]
