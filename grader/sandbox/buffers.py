"""Arrays shared between parent and worker, with guard zones around each one.

The parent allocates every argument of ``solve`` (outputs preallocated, poisoned and guarded by the parent): on the GPU with plain
``cudaMalloc`` (not CuPy's pool) so that it can be exported through CUDA IPC; on the host
(tests, CPU-side fake submissions) in POSIX shared memory. Each allocation is laid out as::

    [ guard 64 KiB | offset | data (rounded up to 256 B) | guard 64 KiB ]

The data starts 256-byte aligned plus ``offset`` bytes (0 unless the spec asks for misaligned views).
Guards are filled with :data:`GUARD_BYTE` before each call and checked after it, so writes just
outside an output (a missing bounds check) are caught without a sanitizer. The worker maps the same
memory through :class:`Mapper`.

An :class:`Arena` is one allocation that holds several such guarded arrays back to back: the
buffers of one timed round (every input set of a benchmark shape). The parent allocates a fresh
arena for every round and every contestant, so the memory a timed call reads is memory the worker
could not address before that call's request (no work queued earlier may touch a timed call's inputs): work a worker queued earlier
(a kernel waiting for the next inputs) can only ever see stale buffers. A worker's mapping keeps an
allocation alive after the parent frees it (CUDA IPC and POSIX shared memory are reference counted;
checked on the H200, 2026-12-01: a stale importer mapping still read the old data after the
exporter freed it and allocated eight new buffers), so freed memory is never re-used under a stale
mapping.

CUDA allocations are rounded up to 2 MiB: cudaMalloc may sub-allocate small buffers from a larger
block, and CUDA IPC then shares the whole block, other allocations of the parent included (CUDA C
Programming Guide, "Interprocess Communication").
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

GUARD = 64 * 1024
ALIGN = 256
GUARD_BYTE = 0xCB
IPC_GRANULE = 2 << 20   # bytes: CUDA allocations that are shared are rounded up to this


@dataclass(frozen=True)
class Descriptor:
    """What the worker needs to map one array: backend ("host" or "cuda"), shared-memory name or
    IPC handle (hex) and size (bytes) of the allocation that holds it, the byte position of the
    array's own guarded region in that allocation (``base``; 0 unless it lives in an arena), shape,
    dtype and the data's byte offset past the front guard."""
    backend: str
    handle: str
    total: int
    shape: tuple[int, ...]
    dtype: str
    offset: int = 0
    base: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "handle": self.handle, "total": self.total,
                "shape": list(self.shape), "dtype": self.dtype, "offset": self.offset, "base": self.base}

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Descriptor":
        return Descriptor(d["backend"], d["handle"], int(d["total"]), tuple(int(s) for s in d["shape"]), d["dtype"],
                          int(d.get("offset", 0)), int(d.get("base", 0)))


CUDA_ERROR_MEMORY_ALLOCATION = 2   # cudaErrorMemoryAllocation (CUDA Runtime API, cudaError enum)


class DeviceMemoryError(RuntimeError):
    """The parent could not allocate an arena: the GPU had too little free memory (another process
    holds it, or the shape's input sets do not fit). Not the submission's fault, so not scored."""

    def __init__(self, needed: int, free: int | None):
        self.needed, self.free = needed, free
        have = f"{free / 2**30:.1f} GiB free" if free is not None else "too little free"
        super().__init__(f"the GPU has {have}, and this shape's input sets need {needed / 2**30:.1f} GiB: "
                         "another process is holding GPU memory (nvidia-smi lists it); "
                         "grade again once it has ended")


class Backend:
    """Parent-side array backend: ``xp`` (numpy or cupy) and guarded allocations."""
    name = "abstract"
    xp: Any = np

    def raw(self, total: int) -> tuple[Any, str, Any]:  # (uint8 xp array, handle, keep-alive)
        """One allocation of at least ``total`` bytes: (uint8 xp array, handle, keep-alive).

        Raises:
            DeviceMemoryError: the device could not hold it."""
        raise NotImplementedError

    def free_bytes(self) -> int | None:
        """Bytes this backend could still allocate now (device memory), or None: not limited here."""
        return None

    def synchronize(self) -> None:
        pass

    def alloc(self, shape: tuple[int, ...], dtype: str, offset_elements: int = 0,
              arena: "Arena | None" = None) -> "GuardedArray":
        return GuardedArray(self, tuple(shape), dtype, offset_elements, arena)


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
        total = -(-total // IPC_GRANULE) * IPC_GRANULE
        try:
            mem = cupy.cuda.memory.Memory(total)
        except cupy.cuda.runtime.CUDARuntimeError as exc:
            if exc.status != CUDA_ERROR_MEMORY_ALLOCATION:
                raise
            raise DeviceMemoryError(total, self.free_bytes()) from exc
        raw = cupy.ndarray((total,), cupy.uint8, memptr=cupy.cuda.MemoryPointer(mem, 0))
        handle = bytes(cupy.cuda.runtime.ipcGetMemHandle(mem.ptr)).hex()
        return raw, handle, mem

    def free_bytes(self) -> int | None:
        """Device memory free now (cudaMemGetInfo) plus what CuPy's pools hold unused, in bytes."""
        cupy = self._cupy
        return int(cupy.cuda.runtime.memGetInfo()[0]) + int(cupy.get_default_memory_pool().free_bytes())

    def synchronize(self) -> None:
        self._cupy.cuda.runtime.deviceSynchronize()


def guarded_size(shape: tuple[int, ...], dtype: str, offset_elements: int = 0) -> int:
    """Bytes one guarded array takes: both guards, the offset and the data rounded up to 256 B."""
    item = np.dtype(dtype).itemsize
    padded = -(-max(offset_elements * item + math.prod(shape) * item, 1) // ALIGN) * ALIGN
    return 2 * GUARD + padded


class Arena:
    """One fresh allocation of ``total`` bytes that guarded arrays are carved from in order (see the
    module docstring). ``free`` releases the parent's reference."""

    def __init__(self, backend: Backend, total: int):
        self.backend = backend
        self.raw, self.handle, self._keep = backend.raw(max(total, ALIGN))
        self.total = int(self.raw.size)
        self.used = 0

    def take(self, nbytes: int) -> tuple[Any, int]:
        """(uint8 view of the next ``nbytes``, its byte position in the arena).

        Raises:
            ValueError: the arena is full (the caller sized it wrongly).
        """
        base = self.used
        if base + nbytes > self.total:
            raise ValueError(f"arena of {self.total} bytes cannot hold {nbytes} more at {base}")
        self.used = base + -(-nbytes // ALIGN) * ALIGN
        return self.raw[base:base + nbytes], base

    def free(self) -> None:
        keep, self._keep = self._keep, None
        self.raw = None
        if callable(keep):
            keep()


class GuardedArray:
    """One parent-owned argument: ``array`` is the data view; ``raw`` the guarded region (its own
    allocation, or a slice of an :class:`Arena`, which then owns the memory)."""

    def __init__(self, backend: Backend, shape: tuple[int, ...], dtype: str, offset_elements: int = 0,
                 arena: Arena | None = None):
        self.backend, self.shape, self.dtype = backend, shape, dtype
        self.nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        self.offset = offset_elements * np.dtype(dtype).itemsize
        self.total = guarded_size(shape, dtype, offset_elements)
        if arena is None:
            self.raw, self.handle, self._keep = backend.raw(self.total)
            self.base, self.block = 0, int(self.raw.size)
            self.raw = self.raw[:self.total]
        else:
            self.raw, self.base = arena.take(self.total)
            self.handle, self.block, self._keep = arena.handle, arena.total, None
        self.start = GUARD + self.offset
        self.array = self.raw[self.start:self.start + self.nbytes].view(dtype).reshape(shape)
        self.fill_guards()

    @property
    def descriptor(self) -> Descriptor:
        return Descriptor(self.backend.name, self.handle, self.block, self.shape, self.dtype, self.offset, self.base)

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
        start = d.base + GUARD + d.offset
        if start + nbytes > raw.size:
            raise ValueError(f"descriptor outside its allocation ({start} + {nbytes} > {raw.size})")
        if d.backend == "cuda":   # one constructor call, not three views (microseconds per argument)
            import cupy
            return cupy.ndarray(d.shape, d.dtype, memptr=raw.data + start)
        return raw[start:start + nbytes].view(d.dtype).reshape(d.shape)

    def _map(self, d: Descriptor) -> tuple[Any, Any]:
        if d.backend == "host":
            # mapped directly, not through multiprocessing.shared_memory: attaching there starts a
            # resource-tracker process (Python < 3.13) that outlives the worker, re-parented to the
            # grader, and would be taken for a process the submission left behind
            import mmap
            fd = os.open("/dev/shm/" + d.handle.lstrip("/"), os.O_RDWR)
            try:
                m = mmap.mmap(fd, d.total)
            finally:
                os.close(fd)
            return np.ndarray((d.total,), np.uint8, buffer=m), m
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
