"""The one helper a submission imports: compile ``kernel.cu`` through NVRTC.

In ``solution.py``::

    from grader.kernel import load
    module = load("kernel.cu")                 # a cupy.RawModule, compiled once and cached
    add = module.get_function("vector_add")    # kernels are declared extern "C" __global__

The path is relative to the calling file. The exercise's compile options (its spec's
``[compile] options``) are set by the grader's worker through :func:`configure`, and CuPy's
include folders and defaults are added as a ``cupy.RawModule`` would add them; the architecture is
the current device's (``-arch=sm_90`` on an H100/H200), or the spec's ``[features] arch`` when it
pins one with an "a" suffix (``-arch=sm_90a`` for wgmma; see :func:`target_arch`). One NVRTC compile, named by the file's
absolute path (so ``#include "helper.cuh"`` finds a header beside it), gives both the cubin that
is loaded and its PTX with line information (:func:`ptx_of_module`): the grader judges exactly
the code that runs. Compiled modules are cached in memory per (path, source, options).

Compile errors raise :class:`CompileError`, whose message lists ``kernel.cu:LINE: error: ...``.
For TMA kernels, :func:`tensor_map` (from :mod:`grader.tma`) builds the ``CUtensorMap`` argument.
"""
from __future__ import annotations

import inspect
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from grader.tma import TensorMapError, tensor_map  # noqa: F401 - re-exported: solution.py imports them from here

DEFAULT_OPTIONS: tuple[str, ...] = ("-std=c++17",)
_options: tuple[str, ...] = DEFAULT_OPTIONS
_arch: str | None = None   # the exercise's [features] arch ("sm_90a"), set by configure; None: the GPU's own
_cache: dict[tuple[str, str, tuple[str, ...], str], Any] = {}
_ptx: dict[int, str] = {}   # id(module) -> the PTX (with line information) of the code it holds
loaded: list[tuple[Path, Any]] = []  # (source path, module) in load order, for the resource report

_NVRTC_LINE = re.compile(r"^(?P<file>[^\s:()]*)\((?P<line>\d+)\): (?P<kind>error|warning|catastrophic error)\s*:?\s*(?P<msg>.*)$")
_KERNEL_DECL = re.compile(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(")


class CompileError(Exception):
    """NVRTC rejected the source. ``diagnostics`` are ``(file, line, kind, message)`` (see
    :func:`parse_compiler_log`); ``str()`` is ``kernel.cu:LINE: error: message`` lines, or
    ``helper.cuh:LINE: ...`` for an error in an included header (the full compiler log is in ``log``)."""

    def __init__(self, file: str, diagnostics: list[tuple[str, int, str, str]], log: str):
        self.file, self.diagnostics, self.log = file, diagnostics, log
        lines = [f"{where}:{ln}: {kind}: {msg}" for where, ln, kind, msg in diagnostics if kind != "warning"]
        super().__init__("\n".join(lines) or f"{file}: compilation failed:\n{log.strip()}")


@dataclass(frozen=True)
class KernelResources:
    """Per-kernel resources read back from the compiled binary.

    registers: per thread; shared_bytes: static shared memory per block; local_bytes: local
    memory per thread (stack frame and register spills; > 0 often means spills);
    max_threads: the largest block this kernel can be launched with.
    """
    name: str
    registers: int
    shared_bytes: int
    local_bytes: int
    max_threads: int


def configure(options: tuple[str, ...] | list[str], arch: str | None = None) -> None:
    """Set the NVRTC options that :func:`load` uses and the exercise's ``[features] arch`` ("sm_90a",
    "sm_80"; None: none), which :func:`target_arch` turns into the target (called by the grader's worker,
    for the submission and the reference alike)."""
    global _options, _arch
    _options = tuple(options)
    _arch = arch


def target_arch(required: str | None, cc: int | None, known: tuple[int, ...] | None = None) -> str:
    """The NVRTC target for an exercise whose ``[features] arch`` is ``required`` on a GPU of compute
    capability ``cc`` (90 for 9.0; None: no GPU here), NVRTC knowing the capabilities ``known``
    (default: ``grader.static.supported_arches()``).

    - ``"sm_XYa"``: itself, always: architecture-specific code (wgmma) exists for that target only, and
      runs on compute capability X.Y only (``grader.device.arch_refusal`` refuses any other GPU first).
    - otherwise, with a GPU: the GPU's own, ``sm_CC``, or where NVRTC does not know CC, PTX for the
      newest ``compute_N`` with N <= CC, which the driver compiles. A plain ``"sm_XY"`` is a minimum
      (refused on an older GPU), never the target: a cubin for sm_80 would not load on sm_90.
    - otherwise (no GPU): ``required``, else "sm_90".
    """
    if required and required.endswith("a"):
        return required
    if cc is None:
        return required or "sm_90"
    if known is None:
        from grader.static import supported_arches
        known = supported_arches()
    return f"sm_{cc}" if cc in known else f"compute_{max([a for a in known if a <= cc] or [cc])}"


def _device_cc() -> int:
    """The current CUDA device's compute capability as an integer (90 for 9.0)."""
    import cupy
    return int(cupy.cuda.Device().compute_capability)


# A C++ standard library header a kernel cannot include under NVRTC (no host library there):
# `#include <vector>` failed with only "cannot open source file" (new-user trial, 2026-12-04).
_HOST_HEADER = re.compile(r'cannot open source file "(vector|string|iostream|map|set|unordered_map|algorithm|memory|'
                          r'sstream|fstream|list|deque|queue|stack|functional|thread|mutex|chrono|random)"')


def parse_compiler_log(log: str, file: str, folder: Path | None = None) -> list[tuple[str, int, str, str]]:
    """``(file, line, kind, message)`` for each diagnostic in an NVRTC or nvcc log: the file the
    log names (``file`` where it names none), relative to ``folder`` when it lies inside it, so an
    error in a header beside kernel.cu reads ``helper.cuh:LINE``, not ``kernel.cu:LINE``."""
    out = []
    for raw in log.splitlines():
        m = _NVRTC_LINE.match(raw.strip())
        if m:
            where = m["file"] or file
            if folder is not None and Path(where).is_absolute() and Path(where).is_relative_to(folder):
                where = str(Path(where).relative_to(folder))
            msg = m["msg"].strip()
            if 'cannot open source file "crt/' in msg:   # see grader.static.crt_include_folder
                msg += (" (this machine's CUDA headers lack CUDA 13's compiler runtime headers, crt/: install the "
                        "nvidia-cuda-crt wheel (conda: cuda-crt) beside CuPy, or set CUDA_PATH to a full CUDA toolkit)")
            elif (std := _HOST_HEADER.search(msg)) is not None:
                msg += (f" (<{std[1]}> is part of the host's C++ standard library, which NVRTC does not have: device "
                        f"code uses plain arrays and CUDA's own headers)")
            out.append((where, int(m["line"]), m["kind"], msg))
    return out


def kernel_names(source: str) -> list[str]:
    """Names of the ``__global__`` functions declared in ``source`` (in order)."""
    return list(dict.fromkeys(_KERNEL_DECL.findall(source)))


def defined_kernel_names(source: str) -> list[str]:
    """Names of the ``__global__`` functions ``source`` defines (a body follows the parameter
    list), not those it only declares (``...);``), in order."""
    out = []
    for m in _KERNEL_DECL.finditer(source):
        depth, i = 1, m.end()
        while i < len(source) and depth:
            depth += {"(": 1, ")": -1}.get(source[i], 0)
            i += 1
        if source[i:].lstrip().startswith("{"):
            out.append(m.group(1))
    return list(dict.fromkeys(out))


def load(path: str | Path = "kernel.cu", *, options: tuple[str, ...] = ()) -> Any:
    """Compile a CUDA source file with NVRTC and return its ``cupy.RawModule``.

    Args:
        path: the ``.cu`` file; relative paths are resolved against the calling file's folder.
        options: extra NVRTC options, appended to the exercise's. A file compiled with extra
            options is a module the grader did not compile before the submission ran, so in a
            graded worker its kernels are not recognised as the submission's own (the
            own-kernels check refuses them): grading uses the exercise's options only.

    Raises:
        FileNotFoundError: the file does not exist.
        CompileError: NVRTC reported errors (lines as ``kernel.cu:LINE: error: message``).
    """
    p = Path(path)
    if not p.is_absolute():
        caller = Path(inspect.stack()[1].filename).resolve().parent
        p = caller / p
    p = p.resolve()
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such kernel file")
    module = _compiled(p, tuple(_options) + tuple(options))
    if not any(m is module for _, m in loaded):
        loaded.append((p, module))
    return module


def _compiled(p: Path, opts: tuple[str, ...]) -> Any:
    """``p`` compiled with ``opts`` and loaded on the current device, once per (path, source,
    options). Raises :class:`CompileError`."""
    import cupy

    source = p.read_text()
    arch = target_arch(_arch, _device_cc())
    key = (str(p), source, opts, arch)
    if key in _cache:
        return _cache[key]
    binary, ptx = compile_source(source, p, opts, arch)
    folder = Path(tempfile.mkdtemp(prefix="grader-kernel-"))
    image = folder / (p.stem + (".cubin" if isinstance(binary, bytes) else ".ptx"))
    image.write_bytes(binary if isinstance(binary, bytes) else binary.encode())
    module = cupy.RawModule(path=str(image))
    module.module   # loads it now: inside the kernel tracer's own window when the worker preloads
    _cache[key] = module
    _ptx[id(module)] = ptx
    return module


def compile_source(source: str, path: Path, opts: tuple[str, ...], arch: str | None = None) -> tuple[bytes | str, str]:
    """Compile ``source`` (the text of ``path``) with NVRTC for ``arch`` ("sm_90", "sm_90a"; by default
    :func:`target_arch` of the configured ``[features] arch`` and the current device: the device's
    own, or ``compute_XX`` PTX where NVRTC does not know it): the options
    ``opts`` as a ``cupy.RawModule`` assembles them (see ``grader.static.grading_options``) plus
    ``-lineinfo``, named by ``path`` (its ``.file`` lines name the files each kernel's code comes
    from). Returns (cubin bytes, PTX text) from that one compile; for a ``compute_XX`` target,
    (PTX, the same PTX) for the driver to compile. Raises :class:`CompileError`."""
    from grader.static import _nvrtc, grading_options

    nvrtc = _nvrtc()
    if arch is None:
        arch = target_arch(_arch, _device_cc())   # compute_XX: the driver JITs the PTX
    prog = nvrtc.createProgram(source, str(path), [], [])
    try:
        try:
            nvrtc.compileProgram(prog, [*grading_options(opts, arch), "-lineinfo"])
        except nvrtc.NVRTCError:
            log = nvrtc.getProgramLog(prog)
            log = (log.decode(errors="replace") if isinstance(log, bytes) else log).replace("\x00", "")
            log = log.replace(str(path), path.name)
            raise CompileError(path.name, parse_compiler_log(log, path.name, path.parent), log) from None
        raw = nvrtc.getPTX(prog)
        ptx = raw.decode(errors="replace").rstrip("\x00") if isinstance(raw, bytes) else raw
        return (nvrtc.getCUBIN(prog) if arch.startswith("sm_") else ptx), ptx
    finally:
        nvrtc.destroyProgram(prog)


def ptx_of_module(module: Any) -> str | None:
    """The PTX (with ``.loc`` line information) of a module :func:`load` or :func:`preload`
    returned: the code its cubin holds. None for any other module."""
    return _ptx.get(id(module))


def hidden(relative: Path) -> bool:
    """Whether a path relative to a submission folder is in a hidden folder or is a hidden file
    (``.ipynb_checkpoints``, ``.git``): not part of the submission."""
    return any(part.startswith(".") for part in relative.parts)


def preload(folder: Path, on_file: Callable[[str], None] | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """Compile and load every ``.cu`` file under ``folder`` with the exercise's options, as
    :func:`load` would (a later ``load`` of the same file returns the same module). The worker
    calls this before any submission code runs, inside the kernel tracer's own window: these
    modules are the submission's own (see ``grader/sandbox/kernel_trace.c``); files in hidden
    folders (``.ipynb_checkpoints``) are left out. Returns
    ({file: PTX of its loaded module}, {file: why it did not compile or load}), files relative to
    ``folder`` (``load`` reports the errors again when the submission asks for such a file).
    ``on_file`` is called with each file's relative path just before it is compiled (the worker
    notes it in its log: NVRTC compiles in-process, so a compiler that crashes ends the worker,
    and the note names the file it crashed on)."""
    done, failed = {}, {}
    for p in sorted(folder.rglob("*.cu")):
        rel = p.relative_to(folder)
        if not p.is_file() or hidden(rel):
            continue
        if on_file is not None:
            on_file(str(rel))
        try:
            done[str(rel)] = ptx_of_module(_compiled(p.resolve(), tuple(_options))) or ""
        except Exception as exc:  # noqa: BLE001 - a compile error, an unreadable file, a module the driver refuses
            failed[str(rel)] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return done, failed


def resources(path: Path, module: Any) -> list[KernelResources]:
    """Registers, shared and local memory of every kernel declared in ``path``'s source."""
    out = []
    for name in kernel_names(path.read_text()):
        try:
            attrs = module.get_function(name).attributes
        except Exception:  # a declared but templated/unused kernel has no plain symbol
            continue
        out.append(KernelResources(name, int(attrs["num_regs"]), int(attrs["shared_size_bytes"]),
                                   int(attrs["local_size_bytes"]), int(attrs["max_threads_per_block"])))
    return out


# Bounds on what :func:`resources_from_reply` keeps (a real kernel is far inside them).
REPLY_MAX_KERNELS = 256
REPLY_MAX_NAME = 512           # characters of a file or kernel name
REPLY_MAX_VALUE = 2**32        # registers, bytes or threads
_REPLY_STR_KEYS = ("file", "name")
_REPLY_INT_KEYS = ("registers", "shared_bytes", "local_bytes", "max_threads")


def resources_from_reply(raw: Any) -> tuple[dict[str, Any], ...]:
    """The well-formed entries of the kernel list a worker's load reply carries (the worker
    builds it from :func:`resources`, but submission code runs in that process and can change it):
    each kept entry is a new dict of exactly ``file`` and ``name`` (non-empty strings of at most
    REPLY_MAX_NAME characters) and ``registers``, ``shared_bytes``, ``local_bytes`` (bytes per
    block for shared, per thread for local) and ``max_threads`` (ints, not bools, in
    [0, REPLY_MAX_VALUE]); extra keys are left out. Anything else (not a list, not a dict, a key
    missing or of the wrong type, a float, a negative) is dropped, as are entries beyond the first
    REPLY_MAX_KERNELS. Never raises."""
    if not isinstance(raw, (list, tuple)):
        return ()
    out = []
    for entry in raw[:REPLY_MAX_KERNELS]:
        if not isinstance(entry, dict):
            continue
        strs = [entry.get(k) for k in _REPLY_STR_KEYS]
        ints = [entry.get(k) for k in _REPLY_INT_KEYS]
        if not all(type(v) is str and 0 < len(v) <= REPLY_MAX_NAME for v in strs):
            continue
        if not all(type(v) is int and 0 <= v <= REPLY_MAX_VALUE for v in ints):
            continue
        out.append({**dict(zip(_REPLY_STR_KEYS, strs)), **dict(zip(_REPLY_INT_KEYS, ints))})
    return tuple(out)
