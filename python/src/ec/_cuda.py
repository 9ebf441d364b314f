"""CUDA tensors from the engine's device memory: CUDA IPC through the driver API (ctypes, no
extra dependency), wrapped for torch with ``__cuda_array_interface__``. Used only with
``device="cuda:N"``; everything here fails with a clear ``ec.Error`` where CUDA is missing."""

from __future__ import annotations

import ctypes
from typing import Any, Dict, Optional, Sequence, Tuple

from ._errors import Error

_TYPESTR = {"uint8": "|u1", "uint16": "<u2", "float32": "<f4"}
_IPC_LAZY_ENABLE_PEER_ACCESS = 1


class _IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]


class _Driver:
    def __init__(self) -> None:
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as err:
            raise Error("ERR_DEVICE_UNAVAILABLE", f"Expected the NVIDIA driver (libcuda.so.1) for device tensors but it cannot be loaded: {err}") from err
        self.open_handle = getattr(self.lib, "cuIpcOpenMemHandle_v2", None) or self.lib.cuIpcOpenMemHandle
        self._check(self.lib.cuInit(0), "cuInit")
        self._contexts: Dict[int, ctypes.c_void_p] = {}

    def _check(self, result: int, what: str) -> None:
        if result != 0:
            text = ctypes.c_char_p()
            self.lib.cuGetErrorString(result, ctypes.byref(text))
            raise Error("ERR_CUDA", f"{what} failed: {(text.value or b'').decode() or result}")

    def _push(self, index: int) -> None:
        ctx = self._contexts.get(index)
        if ctx is None:
            dev = ctypes.c_int()
            self._check(self.lib.cuDeviceGet(ctypes.byref(dev), index), "cuDeviceGet")
            ctx = ctypes.c_void_p()
            # The primary context: the one torch and the engine use, so pointers agree.
            self._check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
            self._contexts[index] = ctx
        self._check(self.lib.cuCtxPushCurrent_v2(ctx), "cuCtxPushCurrent")

    def _pop(self) -> None:
        popped = ctypes.c_void_p()
        self.lib.cuCtxPopCurrent_v2(ctypes.byref(popped))

    def open(self, index: int, handle: bytes) -> int:
        if len(handle) != ctypes.sizeof(_IpcHandle):
            raise Error("ERR_ENGINE_PROTOCOL", f"Expected a CUDA IPC handle of {ctypes.sizeof(_IpcHandle)} bytes but received {len(handle)}")
        h = _IpcHandle()
        ctypes.memmove(h.reserved, handle, 64)
        ptr = ctypes.c_uint64()
        self._push(index)
        try:
            self._check(self.open_handle(ctypes.byref(ptr), h, _IPC_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle")
        finally:
            self._pop()
        return ptr.value

    def close(self, index: int, pointer: int) -> None:
        self._push(index)
        try:
            self.lib.cuIpcCloseMemHandle(ctypes.c_uint64(pointer))
        finally:
            self._pop()


_driver: Optional[_Driver] = None


def driver() -> _Driver:
    global _driver
    if _driver is None:
        _driver = _Driver()
    return _driver


def require_cuda(device: str) -> None:
    """Fails before any I/O when ``device`` cannot hold tensors here."""
    try:
        import torch
    except ImportError:
        raise Error("ERR_DEVICE_UNAVAILABLE", f"Expected torch with CUDA for device {device!r} but torch is not installed") from None
    index = int(device.split(":")[1]) if ":" in device else 0
    if not torch.cuda.is_available() or index >= torch.cuda.device_count():
        raise Error("ERR_DEVICE_UNAVAILABLE", f"Expected a CUDA device {device!r} but torch sees {torch.cuda.device_count() if torch.cuda.is_available() else 'none'}")
    driver()


class CudaArray:
    """A device buffer as ``__cuda_array_interface__`` (torch keeps this object alive with its tensor)."""

    def __init__(self, pointer: int, shape: Sequence[int], dtype: str) -> None:
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": _TYPESTR[dtype], "data": (pointer, False), "version": 2, "strides": None}


class DeviceSlots:
    """The engine's device slots opened in this process, by slot: (handle, device index, pointer)."""

    def __init__(self) -> None:
        self._open: Dict[int, Tuple[bytes, int, int]] = {}

    def pointer(self, slot: int, handle: bytes, device: str) -> Tuple[int, int]:
        index = int(device.split(":")[1])
        current = self._open.get(slot)
        if current is None or current[0] != handle:
            if current is not None:
                driver().close(current[1], current[2])  # the slot was free: no tensor over it is alive
            pointer = driver().open(index, handle)
            current = (handle, index, pointer)
            self._open[slot] = current
        return current[2], index

    def close(self) -> None:
        for _, index, pointer in self._open.values():
            try:
                driver().close(index, pointer)
            except Error:
                pass
        self._open = {}


def tensor(pointer: int, index: int, shape: Sequence[int], dtype: str) -> Tuple[Any, CudaArray]:
    import torch

    holder = CudaArray(pointer, shape, dtype)
    return torch.as_tensor(holder, device=torch.device("cuda", index)), holder
