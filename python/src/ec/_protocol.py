"""The engine's events as checked values: nothing it sends indexes, sizes or maps memory unchecked.

A message out of protocol (a slot the ring does not have, a shape past the slot's capacity, a dtype
the engine never sends, a CUDA IPC handle of the wrong length) raises ``ERR_ENGINE_PROTOCOL``.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, cast

from ._errors import Error
from ._types import Clip

PROTOCOL = "ERR_ENGINE_PROTOCOL"
# What a batch's dtype may be: uint8 frames, or a .npy array's dtype (the engine's ARRAY_DTYPES).
DTYPES = {
    "bool": 1,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "float32": 4,
    "float64": 8,
    "int64": 8,
    "uint64": 8,
}
# cuIpcGetMemHandle's CUipcMemHandle: 64 bytes.
IPC_HANDLE_BYTES = 64
_CUDA_DEVICE = re.compile(r"cuda:\d+\Z")


def violation(what: str, ev: Mapping[str, Any]) -> Error:
    """``ERR_ENGINE_PROTOCOL`` naming what was wrong and the event (cut short)."""
    return Error(PROTOCOL, f"Expected {what} from the ec engine but received {str(dict(ev))[:300]}")


def _int(ev: Mapping[str, Any], key: str, low: int) -> int:
    value = ev.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise violation(f"an integer >= {low} as {key!r}", ev)
    return value


def _count(ev: Mapping[str, Any], key: str) -> Optional[int]:
    """A clip count, or None where the engine sends null: not known until the epoch's end (table pages read lazily)."""
    if key in ev and ev[key] is None:
        return None
    return _int(ev, key, 0)


def _str(ev: Mapping[str, Any], key: str) -> str:
    value = ev.get(key)
    if not isinstance(value, str):
        raise violation(f"a string as {key!r}", ev)
    return value


class Opened(NamedTuple):
    clips: Optional[int]
    total: Optional[int]
    paths: List[str]
    kept: bool


def opened(ev: Mapping[str, Any]) -> Opened:
    """The ``opened`` event: clip counts and the ring's slot files (the engine sizes the ring)."""
    slots: object = ev.get("slots")
    if not isinstance(slots, list) or not slots:
        raise violation("a non-empty list of slot files as 'slots'", ev)
    paths: List[str] = []
    for slot in cast("List[object]", slots):
        path = cast("Mapping[str, object]", slot).get("path") if isinstance(slot, dict) else None
        if not isinstance(path, str) or not path:
            raise violation("a path for every slot file", ev)
        paths.append(path)
    return Opened(_count(ev, "clips"), _count(ev, "total"), paths, ev.get("kept") is True)


class BatchEvent(NamedTuple):
    seq: int
    slot: int
    capacity: int
    nbytes: int
    shape: List[int]
    dtype: str
    pixel_format: str
    device: str
    #: The CUDA IPC handle of a batch in device memory (64 bytes), else None.
    ipc: Optional[bytes]
    clips: List[Clip]


def batch(ev: Mapping[str, Any], last_seq: int, slots: int, ipc: bool) -> BatchEvent:
    """A ``batch`` event checked against the ring (``slots`` files) and what the client asked (``ipc``)."""
    seq = _int(ev, "seq", last_seq + 1)
    slot = _int(ev, "slot", 0)
    if slot >= slots:
        raise violation(f"a slot below {slots}", ev)
    capacity = _int(ev, "capacity", 1)
    nbytes = _int(ev, "bytes", 1)
    dtype = _str(ev, "dtype")
    if dtype not in DTYPES:
        raise violation(f"a dtype of {sorted(DTYPES)}", ev)
    raw_shape: object = ev.get("shape")
    if not isinstance(raw_shape, list) or not raw_shape:
        raise violation("a shape (a non-empty list of sizes)", ev)
    shape: List[int] = []
    for size in cast("List[object]", raw_shape):
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise violation("a shape of sizes >= 0", ev)
        shape.append(size)
    if math.prod(shape) * DTYPES[dtype] != nbytes:
        raise violation(f"'bytes' equal to the shape's {shape} {dtype} elements", ev)
    if nbytes > capacity:
        raise violation(f"a batch within its slot's capacity ({capacity} bytes)", ev)
    raw_clips: object = ev.get("clips")
    if not isinstance(raw_clips, list) or len(cast("List[object]", raw_clips)) != shape[0]:
        raise violation(f"one clip per batch row ({shape[0]})", ev)
    clips: List[Clip] = []
    for clip in cast("List[object]", raw_clips):
        if not isinstance(clip, dict):
            raise violation("every clip as an object", ev)
        clips.append(cast(Clip, clip))
    device = _str(ev, "device")
    handle: Optional[bytes] = None
    if "ipc" in ev:
        if not ipc:
            raise violation("a batch in shared memory (this client maps no CUDA IPC handle)", ev)
        try:
            handle = base64.b64decode(_str(ev, "ipc"), validate=True)
        except (binascii.Error, ValueError):
            raise violation("a base64 CUDA IPC handle as 'ipc'", ev) from None
        if len(handle) != IPC_HANDLE_BYTES:
            raise violation(f"a CUDA IPC handle of {IPC_HANDLE_BYTES} bytes", ev)
        if not _CUDA_DEVICE.match(device):
            raise violation("a device \"cuda:N\" for a batch in device memory", ev)
    return BatchEvent(seq, slot, capacity, nbytes, shape, dtype, _str(ev, "pixel_format"), device, handle, clips)


def full(ev: Mapping[str, Any]) -> int:
    """Slots the engine has lent to batches being decoded (not the client's to free)."""
    return _int(ev, "lent", 0) if "lent" in ev else 0


def end(ev: Mapping[str, Any], last_seq: int) -> int:
    return _int(ev, "seq", last_seq + 1)


def failure(ev: Mapping[str, Any]) -> Dict[str, str]:
    """An ``error`` or ``failed`` event's code and message."""
    return {"code": _str(ev, "code"), "message": _str(ev, "message")}
