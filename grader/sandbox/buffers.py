"""Arrays shared between parent and worker, with guard zones around each one.

The parent allocates every argument of ``solve`` (DESIGN must 2): on the GPU with plain
``cudaMalloc`` (not CuPy's pool) so that it can be exported through CUDA IPC; on the host
(tests, CPU-side fake submissions) in POSIX shared memory. Each allocation is laid out as::

    [ guard 64 KiB | offset | data (rounded up to 256 B) | guard 64 KiB ]

The data starts 256-byte aligned plus ``offset`` bytes (0 unless the spec asks for misaligned views). Guards are filled with :data:`GUARD_BYTE` before each call and
checked after it, so writes just outside an output (a missing bounds check) are caught without a
sanitizer. The worker maps the same memory through :func:`open_descriptor`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

GUARD = 64 * 1024
ALIGN = 256
GUARD_BYTE = 0xCB


@dataclass(frozen=True)
class Descriptor:
    """What the worker needs to map one array: backend ("host" or "cuda"), shared-memory name or
    IPC handle (hex), allocation size, shape, dtype and the data's byte offset past the guard."""
    backend: str
    handle: str
    total: int
    shape: tuple[int, ...]
    dtype: str
    offset: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "handle": self.handle, "total": self.total,
                "shape": list(self.shape), "dtype": self.dtype, "offset": self.offset}

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Descriptor":
        return Descriptor(d["backend"], d["handle"], int(d["total"]), tuple(int(s) for s in d["shape"]), d["dtype"],
                          int(d.get("offset", 0)))


class Backend:
    """Parent-side array backend: ``xp`` (numpy or cupy) and guarded allocations."""
    name = "abstract"
    xp: Any = np

    def raw(self, total: int) -> tuple[Any, str, Any]:  # (uint8 xp array, handle, keep-alive)
        raise NotImplementedError

    def synchronize(self) -> None:
        pass

    def alloc(self, shape: tuple[int, ...], dtype: str, offset_elements: int = 0) -> "GuardedArray":
        return GuardedArray(self, tuple(shape), dtype, offset_elements)


class HostBackend(Backend):
    """numpy arrays in POSIX shared memory (for tests and machines without a GPU)."""
    name = "host"
    xp = np

    def raw(self, total: int) -> tuple[Any, str, Any]:
        from multiprocessing import shared_memory
        shm = shared_memory.SharedMemory(create=True, size=total)
        raw = np.ndarray((total,), np.uint8, buffer=shm.buf)

        def free() -> None:
            shm.close()
            shm.unlink()
        return raw, shm.name, free


class CudaBackend(Backend):
    """cupy arrays in plain cudaMalloc allocations exported through CUDA IPC."""
    name = "cuda"

    def __init__(self) -> None:
        import cupy
        self.xp = cupy
        self._cupy = cupy

    def raw(self, total: int) -> tuple[Any, str, Any]:
        cupy = self._cupy
        mem = cupy.cuda.memory.Memory(total)
        raw = cupy.ndarray((total,), cupy.uint8, memptr=cupy.cuda.MemoryPointer(mem, 0))
        handle = bytes(cupy.cuda.runtime.ipcGetMemHandle(mem.ptr)).hex()
        return raw, handle, mem

    def synchronize(self) -> None:
        self._cupy.cuda.runtime.deviceSynchronize()


class GuardedArray:
    """One parent-owned argument: ``array`` is the data view; ``raw`` the whole allocation."""

    def __init__(self, backend: Backend, shape: tuple[int, ...], dtype: str, offset_elements: int = 0):
        self.backend, self.shape, self.dtype = backend, shape, dtype
        self.nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        self.offset = offset_elements * np.dtype(dtype).itemsize
        padded = -(-max(self.offset + self.nbytes, 1) // ALIGN) * ALIGN
        self.total = 2 * GUARD + padded
        self.raw, self.handle, self._keep = backend.raw(self.total)
        self.start = GUARD + self.offset
        self.array = self.raw[self.start:self.start + self.nbytes].view(dtype).reshape(shape)
        self.fill_guards()

    @property
    def descriptor(self) -> Descriptor:
        return Descriptor(self.backend.name, self.handle, self.total, self.shape, self.dtype, self.offset)

    def fill_guards(self) -> None:
        self.raw[:self.start] = GUARD_BYTE
        self.raw[self.start + self.nbytes:] = GUARD_BYTE

    def guard_damage(self) -> str | None:
        """None when both guards are intact, else which side was written and how many bytes."""
        xp = self.backend.xp
        before = int(xp.count_nonzero(self.raw[:self.start] != GUARD_BYTE))
        after = int(xp.count_nonzero(self.raw[self.start + self.nbytes:] != GUARD_BYTE))
        parts = []
        if before:
            parts.append(f"{before} bytes before the start")
        if after:
            parts.append(f"{after} bytes after the end")
        return " and ".join(parts) or None

    def poison(self, view_dtype: Any, bits: int) -> None:
        self.array.view(view_dtype)[...] = view_dtype(bits)

    def free(self) -> None:
        keep, self._keep = self._keep, None
        self.array = self.raw = None  # type: ignore[assignment]
        if callable(keep):
            keep()


# -- worker side --------------------------------------------------------------------------------
class Mapper:
    """Worker-side cache of mapped allocations, keyed by handle; ``release`` unmaps."""

    def __init__(self, backend: str):
        self.backend = backend
        self._maps: dict[str, tuple[Any, Any]] = {}

    def open(self, d: Descriptor) -> Any:
        if d.handle not in self._maps:
            self._maps[d.handle] = self._map(d)
        raw = self._maps[d.handle][0]
        nbytes = math.prod(d.shape) * np.dtype(d.dtype).itemsize
        start = GUARD + d.offset
        return raw[start:start + nbytes].view(d.dtype).reshape(d.shape)

    def _map(self, d: Descriptor) -> tuple[Any, Any]:
        if d.backend == "host":
            from multiprocessing import resource_tracker, shared_memory
            shm = shared_memory.SharedMemory(name=d.handle)
            # Python < 3.13 registers attached segments and unlinks them when this process exits.
            try:
                resource_tracker.unregister(shm._name, "shared_memory")  # noqa: SLF001
            except Exception:
                pass
            return np.ndarray((d.total,), np.uint8, buffer=shm.buf), shm
        import cupy
        ptr = cupy.cuda.runtime.ipcOpenMemHandle(bytes.fromhex(d.handle))
        mem = cupy.cuda.UnownedMemory(ptr, d.total, owner=None)
        raw = cupy.ndarray((d.total,), cupy.uint8, memptr=cupy.cuda.MemoryPointer(mem, 0))
        return raw, ptr

    def release(self, handles: list[str]) -> None:
        for h in handles:
            entry = self._maps.pop(h, None)
            if entry is None:
                continue
            try:
                if self.backend == "host":
                    entry[1].close()
                else:
                    import cupy
                    cupy.cuda.runtime.ipcCloseMemHandle(entry[1])
            except Exception:  # an array the submission kept still points into it; leave it mapped
                pass
