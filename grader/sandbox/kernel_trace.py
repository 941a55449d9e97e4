"""The own-kernels check (a graded result must be the submission's own kernels' work): which kernels ran in a worker, seen from the grader.

A worker of the CUDA backend starts with ``CUDA_INJECTION64_PATH`` naming the tracer library built
from ``kernel_trace.c``: the CUDA driver loads it when the worker initialises CUDA (before any
submission code runs); CUPTI calls it back on every kernel launch, whoever launches it, and it
writes the kernels' names to a file the grader opened (:class:`TraceFile`). After each request
the grader reads the new names; a kernel of a submission's graded call that is not one of the
submission's own (:class:`OwnKernels`) fails the submission (:func:`foreign`).

Tampering from inside the worker is looked for, and fails the submission like a foreign kernel:
the tracer writes each new name at its launch (patching the worker's flush out hides nothing; a
missing flush is itself seen), numbers its lines (lines truncated away or forged leave a gap),
chains every line into a SipHash MAC under a per-worker key it reads from a pipe before any
submission code runs (any byte written, removed or rewritten in the file shows at the next S
line), checks at each write and flush that its descriptor still reaches the grader's file, opened
for appending, and that its launch callbacks are still on; the grader checks the descriptor from
outside (/proc/PID/fd and fdinfo). What it does not cover (README, "Own kernels only"): code that
reads or writes the tracer's own memory (the key; the tracer shares the worker's process), and
library code compiled under one of the submission's own kernel names (kernels are known by name;
CuPy's ``cupy_*`` names are reserved, ``extern "C"`` identifiers spelling a mangled name are never
own).
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader.ptx import Module as PtxModule, parse as ptx_parse, under

SOURCE = Path(__file__).with_name("kernel_trace.c")
LIBRARY = "libgrader_kernel_trace.so"
FD_VAR = "GRADE_KERNEL_TRACE_FD"
KEY_FD_VAR = "GRADE_KERNEL_TRACE_KEY_FD"
INJECTION_VAR = "CUDA_INJECTION64_PATH"
_BUILT: dict[str, "Tracer | str"] = {}


@dataclass(frozen=True)
class Tracer:
    """A built tracer: ``library`` (absolute path of the .so) and the folders a worker must see
    for it to load (``folders``: the library's own and libcupti's)."""
    library: Path
    folders: tuple[str, ...]


def _cuda_roots() -> list[Path]:
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(str(Path(nvcc).resolve().parents[1]))
    roots += ["/usr/local/cuda", *sorted(map(str, Path("/usr/local").glob("cuda-*")), reverse=True)]
    for site_dir in sys.path:   # the nvidia-cuda-cupti wheel (nvidia/cu13, nvidia/cuda_cupti)
        for sub in ("nvidia/cu13", "nvidia/cuda_cupti"):
            roots.append(str(Path(site_dir) / sub))
    return [Path(r) for r in dict.fromkeys(r for r in roots if r) if Path(r).is_dir()]


def find_cupti() -> tuple[Path, Path] | str:
    """(folder of cupti.h, folder of libcupti.so) of the first CUDA toolkit or CUPTI wheel found
    (CUDA_HOME, CUDA_PATH, nvcc's toolkit, /usr/local/cuda*, nvidia/cu13 in site-packages), or a
    one-line reason when there is none."""
    for root in _cuda_roots():
        for inc in (root / "include", root / "extras" / "CUPTI" / "include"):
            if not (inc / "cupti.h").is_file():
                continue
            for lib in (root / "lib64", root / "lib", root / "extras" / "CUPTI" / "lib64", root / "targets" / "x86_64-linux" / "lib"):
                if any(lib.glob("libcupti.so*")):
                    return inc, lib
    return ("no CUPTI found (cupti.h and libcupti.so of a CUDA toolkit; set CUDA_HOME, or pip install "
            "nvidia-cuda-cupti)")


def build(cache: Path) -> Tracer | str:
    """The tracer library, compiled once per source and CUPTI version into ``cache``/tracer (with
    the system C compiler, ``cc``); a one-line reason when it cannot be built."""
    key = str(cache)
    if key in _BUILT:
        return _BUILT[key]
    try:
        _BUILT[key] = _build(cache)
    except OSError as exc:   # a cache folder that cannot be written, say
        _BUILT[key] = f"building the kernel tracer failed: {exc}"
    return _BUILT[key]


def _build(cache: Path) -> Tracer | str:
    if not SOURCE.is_file():
        return f"{SOURCE} is missing from the grader package (reinstall the grader)"
    found = find_cupti()
    if isinstance(found, str):
        return found
    inc, lib = found
    cbids = traced_cbids_header(inc)
    digest = hashlib.sha256(SOURCE.read_bytes() + cbids.encode() + str(lib).encode()).hexdigest()[:16]
    target = cache / "tracer" / digest / LIBRARY
    if not target.is_file():
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            return "no C compiler (cc) to build the kernel tracer"
        target.parent.mkdir(parents=True, exist_ok=True)
        (target.parent / "traced_cbids.h").write_text(cbids)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".so")
        os.close(fd)
        r = subprocess.run([cc, "-shared", "-fPIC", "-O2", str(SOURCE), f"-I{target.parent}", f"-I{inc}", f"-L{lib}",
                            "-lcupti", "-lpthread", "-ldl", f"-Wl,-rpath,{lib}", "-o", tmp], capture_output=True, text=True)
        if r.returncode != 0:
            os.unlink(tmp)
            return f"building the kernel tracer failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}"
        os.replace(tmp, target)   # atomic: a concurrent grade sees the whole library or none
    return Tracer(target, (str(target.parent), str(lib)))


_CBID = re.compile(r"\bCUPTI_(DRIVER|RUNTIME)_TRACE_CBID_(\w+)\s*=")
_MODULE_LOADS = {"cuModuleLoad", "cuModuleLoadData", "cuModuleLoadDataEx", "cuModuleLoadFatBinary"}
_STREAM_OPS = ("cuStreamWaitValue", "cuStreamWriteValue", "cuStreamBatchMemOp")
# calls that free a context's modules without a cuModuleUnload callback (device reset, context
# destroy); cuDevicePrimaryCtxRelease only drops a reference (a runtime may call it in normal
# operation), so it is TRACE_CONTEXT_RELEASE: the own modules are forgotten only when, after it, the
# primary context is no longer active (red-team pass 20: released to zero and retained again, a
# later load could get a dead own module's handle and pass for own)
_CONTEXT_ENDS = ("cuCtxDestroy", "cuCtxDetach", "cuDevicePrimaryCtxReset", "cuGreenCtxDestroy", "cudaDeviceReset",
                 "cudaThreadExit")
# host memory the GPU can reach (page-locked, mapped, registered or managed): kernels could move a
# computation's data to the CPU and back without any traced copy
_HOST_MEMORY = ("cuMemHostAlloc", "cuMemAllocHost", "cuMemHostRegister", "cuMemHostGetDevicePointer",
                "cuMemAllocManaged", "cudaHostAlloc", "cudaMallocHost", "cudaHostRegister", "cudaHostGetDevicePointer",
                "cudaMallocManaged")
HOST_MEMORY_PREFIX = "<host-memory:"
_RUNTIME_COPY_WITH_KIND = re.compile(r"cudaMemcpy(Async)?(_ptsz|_ptds)?_v\d+")


def traced_kind(domain: str, function: str) -> tuple[str, int] | None:
    """What the tracer does with a callback of ``function`` (its name in ``cupti_*_cbid.h``, e.g.
    ``cuLaunchKernel_ptsz``) in ``domain`` ("DRIVER" or "RUNTIME"): ``(kind, arg)`` with the kinds
    of ``kernel_trace.c`` (TRACE_LAUNCH, arg the 1-based index of the CUfunction parameter or 0;
    TRACE_GRAPH; TRACE_COPY, arg 1 where a runtime copy's 4th parameter is its cudaMemcpyKind, 2
    where its 5th is (cudaMemcpyToSymbol*), 3 and 4 for the driver's host-to-device and
    host-to-array copies (source the 2nd or 3rd parameter): copies labelled host-to-device are
    not written when their source is host memory; TRACE_STREAM_OP; TRACE_HOST_MEMORY, an
    allocation or mapping of host memory the GPU can reach; TRACE_MODULE_LOAD;
    TRACE_MODULE_UNLOAD; TRACE_CONTEXT_END, a device reset or context destroy;
    TRACE_CONTEXT_RELEASE, a primary-context release), or None when it
    is not traced (host-function launches, graph construction, everything else)."""
    if "Graph" in function:
        return ("TRACE_GRAPH", 0) if "Launch" in function else None
    if "Launch" in function:
        if "HostFunc" in function:
            return None
        if domain == "RUNTIME" or "MultiDevice" in function:
            return "TRACE_LAUNCH", 0
        return "TRACE_LAUNCH", 2 if function.startswith("cuLaunchKernelEx") else 1
    if "Memcpy" in function:
        if domain == "DRIVER" and ("HtoD" in function or "HtoA" in function):
            return "TRACE_COPY", 3 + ("HtoA" in function)   # an upload only from host memory
        if domain == "RUNTIME" and "ToSymbol" in function:
            return "TRACE_COPY", 2   # its kind is the 5th parameter (symbol, src, count, offset, kind)
        return "TRACE_COPY", int(domain == "RUNTIME" and bool(_RUNTIME_COPY_WITH_KIND.fullmatch(function)))
    if function.startswith(_CONTEXT_ENDS):
        return "TRACE_CONTEXT_END", 0
    if domain == "DRIVER" and function.startswith("cuDevicePrimaryCtxRelease"):
        return "TRACE_CONTEXT_RELEASE", 0
    if domain == "DRIVER" and function.startswith(_STREAM_OPS):
        return "TRACE_STREAM_OP", 0
    if function.startswith(_HOST_MEMORY):
        return "TRACE_HOST_MEMORY", 0
    if domain == "DRIVER" and function in _MODULE_LOADS:
        return "TRACE_MODULE_LOAD", 0
    if domain == "DRIVER" and function == "cuModuleUnload":
        return "TRACE_MODULE_UNLOAD", 0
    return None


def traced_cbids_header(include: Path) -> str:
    """C source of ``TRACED_CBIDS``: every callback id of this toolkit's ``cupti_driver_cbid.h`` and
    ``cupti_runtime_cbid.h`` that the tracer follows (see :func:`traced_kind`), so the tracer
    follows the toolkit it is built with."""
    rows = []
    for header, domain in (("cupti_driver_cbid.h", "DRIVER"), ("cupti_runtime_cbid.h", "RUNTIME")):
        path = include / header
        text = path.read_text(errors="replace") if path.is_file() else ""
        for dom, function in dict.fromkeys(_CBID.findall(text)):
            what = traced_kind(dom, function)
            if what is not None and dom == domain:
                rows.append(f"    {{CUPTI_CB_DOMAIN_{domain}_API, CUPTI_{domain}_TRACE_CBID_{function}, {what[0]}, {what[1]}}},")
    return ("/* generated by grader.sandbox.kernel_trace.traced_cbids_header */\n"
            "static const struct { CUpti_CallbackDomain domain; CUpti_CallbackId cbid; int kind; int arg; } "
            "TRACED_CBIDS[] = {\n" + "\n".join(rows) + "\n};\n")


_MASK = (1 << 64) - 1


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _MASK


def siphash24(key: bytes, data: bytes) -> int:
    """SipHash-2-4 of ``data`` under the 16-byte ``key`` (Aumasson and Bernstein, "SipHash: a fast
    short-input PRF", 2012): the MAC the tracer chains over its lines (``kernel_trace.c``)."""
    k0, k1 = int.from_bytes(key[:8], "little"), int.from_bytes(key[8:16], "little")
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rounds(n: int) -> None:
        for _ in range(n):
            v[0] = (v[0] + v[1]) & _MASK; v[1] = _rotl(v[1], 13) ^ v[0]; v[0] = _rotl(v[0], 32)  # noqa: E702
            v[2] = (v[2] + v[3]) & _MASK; v[3] = _rotl(v[3], 16) ^ v[2]                           # noqa: E702
            v[0] = (v[0] + v[3]) & _MASK; v[3] = _rotl(v[3], 21) ^ v[0]                           # noqa: E702
            v[2] = (v[2] + v[1]) & _MASK; v[1] = _rotl(v[1], 17) ^ v[2]; v[2] = _rotl(v[2], 32)  # noqa: E702
    full = len(data) - len(data) % 8
    for i in range(0, full, 8):
        m = int.from_bytes(data[i:i + 8], "little")
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    last = ((len(data) & 0xFF) << 56) | int.from_bytes(data[full:], "little")
    v[3] ^= last
    rounds(2)
    v[0] ^= last
    v[2] ^= 0xFF
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def chain_mac(key: bytes, mac: int, line: bytes) -> int:
    """The tracer's MAC after ``line`` (without its newline; an S line as "S <seq>")."""
    return siphash24(key, mac.to_bytes(8, "little") + line)


_K_LINE = re.compile(r"K (\d+) ([+-]) (\S+|<CUDA graph launch>|<unnamed kernel>)")


@dataclass(frozen=True)
class Launch:
    """One line of the trace: ``name`` is a kernel's (mangled) name, or the tracer's name for other
    GPU work (``<memcpy:FUNCTION>``, ``<stream-memory-op:FUNCTION>``, ``<CUDA graph launch>``,
    ``<host-memory:FUNCTION>``: host memory made reachable from the GPU);
    ``own_module``: the kernel's function is in a module the worker loaded from the submission's
    ``.cu`` files before any submission code ran (see ``kernel_trace.c``)."""
    name: str
    own_module: bool


_S_LINE = re.compile(r"S (\d+) ([0-9a-f]{16})")
_L_LINE = re.compile(r"L (\d+) ([+-]) (\S+|<CUDA graph launch>|<unnamed kernel>)")
_MARK_LINE = re.compile(r"[BW] (\d+)")
_D_LINE = re.compile(r"D \d+ kernel names dropped")


class TraceFile:
    """The file a worker's tracer writes to: opened here (append-only for the worker, which gets
    the descriptor), read here after each request (the line format is in ``kernel_trace.c``).
    ``status``: "" until the tracer said it is ready, then "CUPTI ..."; ``error``: what the tracer
    or the file said went wrong, tampering included (a gap in the K lines' numbers, an S line that
    does not match them, a T line); ``reported``: whether the last read held the tracer's S line
    (written by the flush that ends every request but a timed round)."""

    def __init__(self) -> None:
        fd, path = tempfile.mkstemp(prefix="grade-kernel-trace-")
        os.close(fd)
        self.worker_fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        self.fd_number = self.worker_fd   # the worker's descriptor has the same number (pass_fds)
        self._read = open(path, "rb")
        os.unlink(path)      # nothing else can open it: only the two descriptors reach it
        st = os.fstat(self._read.fileno())
        self._identity = (st.st_dev, st.st_ino)
        # the MAC key, through a pipe the tracer reads to the end and closes before submission code runs
        self.key = os.urandom(16)
        self.key_fd, key_w = os.pipe()
        os.write(key_w, self.key)
        os.close(key_w)
        self._mac = 0
        self._offset = 0
        self._seq = 0        # the number of the last K line read
        self._fd_seen = False
        self.status = ""
        self.error = ""
        self.reported = False
        self.after_report: list[Launch] = []   # lines of the last read that followed its last S line
        # the timed window (kernel_trace.c's W, L and B lines): requests sent since the tracer
        # started whose B line has not been read, whether the last W is still unanswered by a B,
        # W lines read so far, and work started after a W (kept until take_late)
        self._requests_pending = 0
        self._closed = False
        self.windows_closed = 0
        self.late: list[Launch] = []

    @property
    def pass_fds(self) -> tuple[int, int]:
        """The descriptors the worker must inherit: the trace file's and the key pipe's."""
        return self.worker_fd, self.key_fd

    def env(self, tracer: Tracer) -> dict[str, str]:
        return {INJECTION_VAR: str(tracer.library), FD_VAR: str(self.worker_fd), KEY_FD_VAR: str(self.key_fd)}

    def request_sent(self) -> None:
        """The grader sent the worker a request: once the tracer has started, the worker's trusted
        code writes one B line as it receives it (a B line beyond these is the submission's)."""
        if self.status:
            self._requests_pending += 1

    def take_late(self) -> list[Launch]:
        """Work started after a timed window closed, read since the last call (then forgotten)."""
        late, self.late = self.late, []
        return late

    def names(self) -> list[Launch]:
        """What was launched since the last call (in the order it was written). Lines are
        parsed strictly (the forms in ``kernel_trace.c``) and their MAC recomputed: anything the
        tracer did not write is tampering. ``after_report``: the names that came after the last S
        line read (launched after the worker's flush: the next request must answer for them)."""
        size = os.fstat(self._read.fileno()).st_size
        if size < self._offset:
            self.tampered("the trace was truncated")
            self._offset = size
            return []
        self._read.seek(self._offset)
        data = self._read.read(size - self._offset)
        end = data.rfind(b"\n") + 1        # a line still being written waits for the next read
        self._offset += end
        out: list[Launch] = []
        self.reported = False
        self.after_report = []
        for raw in data[:end].split(b"\n")[:-1]:
            line = raw.decode(errors="replace")
            tag = line[:2]
            if tag == "S ":
                m = _S_LINE.fullmatch(line)
                if m is None:
                    self.tampered(f"a malformed flush line {line[:80]!r}")
                    continue
                self._mac = chain_mac(self.key, self._mac, raw[:-17])
                if m.group(2) != f"{self._mac:016x}":
                    self.tampered("the lines do not carry the tracer's MAC: written, removed or rewritten by the worker")
                if m.group(1) != str(self._seq):
                    self.tampered(f"the tracer wrote {m.group(1)} kernel lines, {self._seq} arrived")
                self.reported = True
                self.after_report = []
                continue
            self._mac = chain_mac(self.key, self._mac, raw)
            if tag == "K ":
                m = _K_LINE.fullmatch(line)
                if m is None:
                    self.tampered(f"a malformed kernel line {line[:80]!r}")
                    continue
                seq, origin, name = m.groups()
                if seq != str(self._seq + 1):
                    self.tampered(f"kernel line {seq!r} follows line {self._seq}: lines were removed or forged")
                self._seq = int(seq)
                out.append(Launch(name, origin == "+"))
                self.after_report.append(out[-1])
            elif tag == "L ":
                m = _L_LINE.fullmatch(line)
                if m is None or not self._closed:
                    self.tampered(f"a late-work line outside a closed timed window {line[:80]!r}")
                    continue
                seq, origin, name = m.groups()
                if seq != str(self._seq + 1):
                    self.tampered(f"line {seq!r} follows line {self._seq}: lines were removed or forged")
                self._seq = int(seq)
                self.late.append(Launch(name, origin == "+"))
            elif tag in ("B ", "W ") and _MARK_LINE.fullmatch(line):
                if tag == "W ":
                    if self._closed:
                        self.tampered("a timed window was closed twice")
                    elif self._requests_pending > 0:   # its request's B is missing or comes after it
                        self.tampered("a timed window closed before its request's start line (the tracer's marks "
                                      "were called from submission code)")
                    self._closed = True
                    self.windows_closed += 1
                elif self._requests_pending <= 0:
                    self.tampered("a request-start line the grader did not cause (the tracer's marks were called "
                                  "from submission code)")
                else:
                    self._requests_pending -= 1
                    self._closed = False
            elif tag == "T ":
                self.tampered(line[2:])
            elif tag == "R " and not self.status and not self._seq:
                self.status = line[2:]
            elif tag == "E " and not self.status:
                self.error = f"the kernel tracer did not start: {line[2:]}"
            elif tag == "D " and _D_LINE.fullmatch(line):
                self.error = f"the kernel tracer lost names: {line[2:]}"
            else:
                self.tampered(f"a line the tracer does not write: {line[:80]!r}")
        return out

    def tampered(self, what: str) -> None:
        """Record that the trace was tampered with (``what``: how); the first record is kept."""
        self.error = self.error or f"the kernel trace was tampered with inside the worker ({what})"

    def check_descriptor(self, pid: int) -> str:
        """Whether the worker ``pid``'s trace descriptor still reaches this file, looked at from
        outside through /proc/PID/fd: a message when it was redirected or closed, "" when it is
        intact (or /proc could never be read for this worker: then nothing is claimed)."""
        try:
            st = os.stat(f"/proc/{pid}/fd/{self.fd_number}")
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}"):
                return ""          # the worker is gone: its end is reported as a crash
            what = "closed"
        except OSError:
            if not self._fd_seen:
                return ""
            what = "hidden from the grader (its /proc entry became unreadable)"
        else:
            self._fd_seen = True
            if (st.st_dev, st.st_ino) != self._identity:
                what = "redirected"
            elif not _appending(pid, self.fd_number):
                what = "no longer opened for appending (lines could be rewritten in place)"
            else:
                return ""
        self.tampered(f"descriptor {self.fd_number} {what}")
        return self.error

    def handed_over(self) -> None:
        """The worker was started with its copies of ``pass_fds``: close the grader's."""
        for attr in ("worker_fd", "key_fd"):
            if getattr(self, attr) >= 0:
                os.close(getattr(self, attr))
                setattr(self, attr, -1)

    def close(self) -> None:
        self.handed_over()
        self._read.close()


def _appending(pid: int, fd: int) -> bool:
    """Whether descriptor ``fd`` of process ``pid`` has O_APPEND (its /proc fdinfo flags, octal);
    True when that cannot be read (nothing is claimed then)."""
    try:
        text = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
    except OSError:
        return True
    m = re.search(r"^flags:\s*([0-7]+)", text, re.M)
    return m is None or bool(int(m.group(1), 8) & os.O_APPEND)


# Kernel names a submission cannot claim as its own: CuPy's generated kernels (cupy_sum,
# cupy_copy__float32_float32...). A kernel.cu that declares one is refused it.
RESERVED_PREFIXES = ("cupy_",)


def entries_from(module: PtxModule, folder: Path | None) -> set[str]:
    """The ``.entry`` names of ``module`` (``grader.ptx.parse``) whose code comes from a file under
    ``folder``: at least one line of the code the entry can run (its own and that of the functions
    it calls) names a path inside it. Kernels instantiated from an included library header (CUB's
    reductions, say) have none. Without line information in the PTX at all, or ``folder`` None,
    every entry."""
    if folder is None or not module.files:
        return module.entries
    return {e for e in module.entries if any(under(path, folder) for path in module.files_of(e))}


def unreadable_message(line: str) -> str:
    """The refusal for a submission whose compiled PTX holds ``line`` (see ``grader.ptx``)."""
    return (f"the compiled PTX holds {line!r}, a string the compiler does not write (inline asm text such as "
            f'.pragma "..."): the grader cannot tell which code such PTX runs; fix: remove it from the asm')


def library_code(module: PtxModule, folders: tuple[str, ...], own: Path | None = None,
                 roots: tuple[str, ...] | None = None) -> dict[str, str]:
    """``{function: header}`` for each ``.entry`` of ``module`` that can run code from a file under one
    of the header ``folders`` (e.g. "cub/": ``.../include/cub/block/block_reduce.cuh``) or from one of
    the header files among them (an entry not ending in "/", e.g. "cooperative_groups/reduce.h":
    ``.../include/cooperative_groups/reduce.h``, the path's tail), inlined or
    in a device function it calls (through a pointer: any function of the module), and for every
    other function with such a line, however a kernel would reach it: device code of those
    libraries anywhere in the module. ``header`` is the first such file, from the folder on. Files under ``own``
    (the submission's folder) are its own, whatever their folders are called. With ``roots`` (the
    compile's include folders, see ``grader.static.include_folders``), a file by an absolute path
    under neither ``own`` nor a root (an ``#include`` of another package's device headers by its
    path, or of anything else on the machine) counts too, its ``header`` being that path. Needs
    line information in the PTX (``-lineinfo``); without it, ``{}``."""
    hits = {}
    for path in module.files.values():
        if own is not None and under(path, own):
            continue
        for folder in folders:   # as written and with links resolved (a link to CUB's folder, say)
            for seen in dict.fromkeys((path, str(Path(path).resolve()) if Path(path).is_absolute() else path)):
                at = header_entry_at(seen, folder)
                if at is not None:
                    hits[path] = seen[at:].lstrip("/")
                    break
            if path in hits:
                break
        if path not in hits and roots is not None and outside(path, roots):
            hits[path] = str(Path(path).resolve())
    if not hits:
        return {}
    out = {}
    for entry in sorted(module.entries):
        header = next((hits[p] for p in sorted(module.files_of(entry)) if p in hits), None)
        if header:
            out[entry] = header
    for name, f in sorted(module.functions.items()):   # however it is reached (a call the reader does
        if name not in out:                            # not follow, a pointer set in an initializer)
            header = next((hits[module.files[i]] for i in sorted(f.files) if module.files.get(i) in hits), None)
            if header:
                out[name] = header
    return out


def header_entry_at(path: str, entry: str) -> int | None:
    """Where the ``forbidden_headers`` ``entry`` starts in ``path``, None when it does not match:
    a folder entry ("cub/") at any component boundary, the innermost (CCCL keeps cub/ under
    .../cub/cub/); a file entry ("cooperative_groups/reduce.h") as the path's tail."""
    found = list(re.finditer(r"(?:^|(?<=/))" + re.escape(entry) + ("" if entry.endswith("/") else "$"), path))
    return found[-1].start() if found else None


def outside(path: str, roots: tuple[str, ...]) -> bool:
    """Whether a ``.file`` path is absolute and lies under none of the folders ``roots``."""
    return Path(path).is_absolute() and not any(under(path, Path(r)) for r in roots)


def indirect_text(entries: tuple[str, ...]) -> str:
    """Why kernels that call through a pointer are refused (see ``grader.ptx.Module.calls_indirectly``)."""
    names = ", ".join(base_name(e) for e in entries)
    return (f"kernel{'s' if len(entries) > 1 else ''} {names} call{'' if len(entries) > 1 else 's'} through a "
            f"function pointer (an indirect call in the PTX: a function pointer or a virtual function): the pointer "
            f"can lead into code the submission did not write (a library's, another module's), which the grader "
            f"cannot check; fix: call your device functions directly")


def library_text(entry: str, header: str) -> str:
    """Why ``entry`` is not the submission's own work when it inlines ``header`` (see
    :func:`library_code`); for messages."""
    if Path(header).is_absolute():
        return (f"{base_name(entry)} inlines device code of {header}, a file outside the submission's folder and the "
                f"compiler's include folders (CUDA's and CuPy's); fix: put code you wrote in the submission folder")
    return (f"{base_name(entry)} inlines device code of {header}, a library this exercise forbids "
            f"([features] forbidden_headers); fix: write that part yourself")


@dataclass(frozen=True)
class OwnKernels:
    """The kernels a submission's graded calls may run. ``entries``: the exact (mangled) names
    of the kernels its ``.cu`` files compile to (PTX ``.entry``) whose code comes from its own
    files (see :func:`entries_from`); ``templates``: the ``__global__`` names its sources define
    (with a body), which match only C++ template instantiations at global scope; ``fallback``: the
    declared names, used only when no compiler could be loaded here at all (never for a file that
    failed to compile), and then only for names at global scope; ``allowed``: the spec's
    ``[features] allowed_kernels`` patterns (kernels or other traced work, by name, from any
    module). ``mangled``: identifiers the sources declare ``extern "C"`` under a C++ mangled name
    (``_Z...``: a library kernel's exact name), which are never own; ``uncompiled``: the ``.cu``
    files that did not compile here, for messages; ``library``: entries of its PTX whose code
    comes from an included header only, or that inline device code of a forbidden header folder
    (``headers``: entry -> that header, see :func:`library_code`), never own; ``unreadable``: a
    line of its PTX the grader cannot read reliably (see ``grader.ptx.Module.unreadable``), which
    refuses the submission; ``duplicates``: (kernel, the files that define it) for each ``.entry``
    name defined by more than one of its ``.cu`` files, which refuses the submission too (a traced
    launch carries a name, not the file: the required-PTX check would read every file's kernel of
    that name, a decoy's included); ``indirect``: the kernels of its PTX that call through a pointer
    (red-team pass 19: a pointer to a device function of a module solution.py compiled itself ran
    library code from an own kernel), which refuses the submission as well. Beyond the name, a
    traced kernel is own only when
    its function is in one of the modules the worker loaded from the submission's ``.cu`` files
    before any submission code ran (:attr:`Launch.own_module`)."""
    entries: frozenset[str]
    templates: frozenset[str]
    fallback: frozenset[str] = frozenset()
    allowed: tuple[str, ...] = ()
    mangled: frozenset[str] = frozenset()
    uncompiled: tuple[str, ...] = ()
    library: frozenset[str] = frozenset()
    headers: tuple[tuple[str, str], ...] = ()
    unreadable: str = ""
    duplicates: tuple[tuple[str, tuple[str, ...]], ...] = ()
    indirect: tuple[str, ...] = ()

    @staticmethod
    def of(sources: list[str], ptx: list[str], allowed: tuple[str, ...] = (), *, compiler: bool = True,
           uncompiled: tuple[str, ...] = (), folder: Path | None = None,
           forbidden_headers: tuple[str, ...] = (), include_roots: tuple[str, ...] | None = None,
           ptx_files: tuple[str, ...] = ()) -> "OwnKernels":
        """From the submission's CUDA sources (comments removed) and the PTX of its ``.cu`` files
        ("" where a file did not compile; with line information, see :func:`entries_from`, whose
        files must lie under ``folder``); ``compiler``: whether a compiler could be loaded here
        (without one, no PTX exists and the declared names stand in); ``ptx_files``: the ``.cu``
        file of each PTX text, in the same order, for messages."""
        from grader.kernel import defined_kernel_names, kernel_names

        def mine(name: str) -> bool:
            return not base_name(name).startswith(RESERVED_PREFIXES)
        raw = {n for text in sources for n in kernel_names(text) if n != "__launch_bounds__"}
        mangled = frozenset(n for n in raw if n.startswith("_Z"))   # a C++ declaration never spells its mangling
        declared = frozenset(n for n in raw - mangled if mine(n))
        modules = [ptx_parse(text) for text in ptx]
        unreadable = next((m.unreadable for m in modules if m.unreadable), "")
        every = {n for m in modules for n in m.entries if mine(n) and n not in mangled}
        headers = {e: h for m in modules for e, h in library_code(m, forbidden_headers, folder, include_roots).items()}
        entries = frozenset(n for m in modules for n in entries_from(m, folder) if n in every and n not in headers)
        # a template instantiation is matched by name: only templates the sources define count (a
        # declaration alone, say of cuBLAS's dot_kernel, defines nothing the submission wrote)
        templates = frozenset(n for text in sources for n in defined_kernel_names(text)) & declared
        defined_in: dict[str, list[str]] = {}
        for k, m in enumerate(modules):
            for n in m.entries:
                defined_in.setdefault(n, []).append(ptx_files[k] if k < len(ptx_files) else f"module {k + 1}")
        duplicates = tuple(sorted((n, tuple(files)) for n, files in defined_in.items() if len(files) > 1))
        indirect = tuple(sorted({n for m in modules for n in m.entries if m.calls_indirectly(n)}))
        return OwnKernels(entries, templates, frozenset() if compiler else declared, tuple(allowed), mangled,
                          tuple(uncompiled), frozenset(every - entries), tuple(sorted(headers.items())), unreadable,
                          duplicates, indirect)

    def forbidden_code(self) -> str:
        """One line naming the kernels that inline device code of a ``[features] forbidden_headers``
        entry or of a file outside the submission and the include folders, or a kernel name defined
        in two ``.cu`` files, or kernels that call through a pointer, or PTX the grader cannot read
        ("" when none): such a submission is refused before it runs."""
        if self.unreadable:
            return unreadable_message(self.unreadable)
        if self.indirect:
            return indirect_text(self.indirect)
        if self.duplicates:
            name, files = self.duplicates[0]
            n = len(self.duplicates) - 1
            more = f" (and {n} more kernel{'s' if n > 1 else ''})" if n else ""
            return (f"kernel {base_name(name)} is defined in {' and '.join(files)}{more}: the grader knows a launched "
                    f"kernel by its name, so each name must have one definition; fix: rename or remove the copy")
        if not self.headers:
            return ""
        return "; ".join(library_text(e, h) for e, h in self.headers)

    def names(self) -> list[str]:
        """Readable names of the submission's kernels, for messages."""
        return sorted({base_name(n) for n in self.entries} | self.fallback)

    def is_allowed(self, name: str) -> bool:
        """Whether the spec's ``allowed_kernels`` patterns match ``name``."""
        from fnmatch import fnmatchcase
        return any(fnmatchcase(name, p) for p in self.allowed)

    def owns(self, traced: str) -> bool:
        """Whether a traced kernel name is one of the submission's kernels (or allowed)."""
        if self.is_allowed(traced):
            return True
        if traced in self.mangled or traced in self.library:
            return False
        if traced in self.entries:
            return True
        nested, name, template = _parse(traced)
        if self.fallback and name in self.fallback and not nested:
            return True
        return traced.startswith("_Z") and not nested and template and name in self.templates

    def accepts(self, launch: Launch) -> bool:
        """Whether a traced launch may run in a graded call: an allowed name, or one of the
        submission's kernels (:meth:`owns`) launched from one of its own modules."""
        return self.is_allowed(launch.name) or (launch.own_module and self.owns(launch.name))

    def why_not(self, launch: Launch) -> str:
        """A hint for the message about a traced launch that is not accepted ("" when there is none)."""
        traced = launch.name
        if traced.startswith("<memcpy:"):
            return (f"{traced[8:-1]} is a memory copy: the exercise's data movement is the kernel's job "
                    f"(copies to the device, zero fills and allocations are fine)")
        if traced.startswith(HOST_MEMORY_PREFIX):
            return (f"{traced[len(HOST_MEMORY_PREFIX):-1]} makes host memory reachable from the GPU (page-locked, "
                    f"mapped or managed): the exercise's work is done on device memory, not moved to the CPU")
        if traced.startswith("<stream-memory-op:"):
            return f"{traced[18:-1]} is a stream memory operation: work queued behind it escapes the timing"
        if traced in self.mangled:
            return f'{base_name(traced)} is declared extern "C" under a mangled C++ name (a library kernel\'s exact name)'
        header = dict(self.headers).get(traced)
        if header:
            return library_text(traced, header)
        if traced in self.library:
            return f"the code of {base_name(traced)} comes from an included library header, not from the submission's files"
        if self.uncompiled and base_name(traced) in self.templates | self.fallback:
            return (f"{', '.join(self.uncompiled)} did not compile here with the exercise's options, so its kernels "
                    f"cannot be recognised (make it compile without extra options)")
        if not launch.own_module and self.owns(traced):
            return (f"{base_name(traced)} was launched from a module the grader did not load from the submission's "
                    f".cu files (compile kernels with grader.kernel.load, without extra options)")
        return ""


@dataclass(frozen=True)
class KernelPolicy:
    """What decides which traced kernels a submission's graded calls may run, known before its
    worker compiles anything: ``sources``, its CUDA sources with comments removed (for the names
    they declare, see :meth:`OwnKernels.of`); ``folder``, the submission folder (own code has
    ``.loc`` lines in files under it); the spec's ``allowed`` kernels and ``forbidden_headers``;
    ``include_roots``, the compile's include folders (device code from an absolute path outside
    them and the folder is never own; None: not checked).
    :meth:`judge` applies it to the PTX of the modules the worker compiled and loaded in its own
    window, which is the code that runs (the worker's ``preload`` reply)."""
    sources: tuple[str, ...]
    folder: Path
    allowed: tuple[str, ...] = ()
    forbidden_headers: tuple[str, ...] = ()
    include_roots: tuple[str, ...] | None = None

    def judge(self, ptx: dict[str, str], failed: dict[str, str]) -> OwnKernels:
        """The :class:`OwnKernels` of a worker whose preload compiled ``ptx`` ({file: PTX}) and
        could not compile ``failed`` ({file: why}); files are relative to ``folder``."""
        return OwnKernels.of(list(self.sources), list(ptx.values()), self.allowed, uncompiled=tuple(sorted(failed)),
                             folder=self.folder, forbidden_headers=self.forbidden_headers,
                             include_roots=self.include_roots, ptx_files=tuple(ptx))


_SOURCE_NAME = re.compile(r"(\d+)")


def _parse(traced: str) -> tuple[bool, str, bool]:
    """(nested in a namespace or class, unqualified function name, a template instantiation) of
    a traced kernel name; for an ``extern "C"`` (unmangled) name: (False, name, False)."""
    if not traced.startswith("_Z"):
        return False, traced, False
    s, i = traced, 2
    if s.startswith("L", i):
        i += 1
    nested = s.startswith("N", i)
    i += int(nested)
    last = None
    while i < len(s):
        if s[i] in "KVr" and nested:     # cv-qualifiers of a nested name
            i += 1
            continue
        m = _SOURCE_NAME.match(s, i)
        if not m:
            break
        start = m.end()
        last = s[start:start + int(m.group(1))]
        i = start + int(m.group(1))
        if not nested or s.startswith(("I", "E"), i):
            break
    return nested, last or traced, bool(last) and s.startswith("I", i)


def base_name(traced: str) -> str:
    """The function name of a traced kernel name: itself for ``extern "C"`` kernels; for C++
    (Itanium-mangled, ``_Z...``) kernels the unqualified name, without namespaces and template
    arguments (``_ZN2ns6kernelILi4EEEvPf`` -> ``kernel``). Unparsable names are returned whole."""
    return _parse(traced)[1]


def foreign(launches: list[Launch], own: OwnKernels) -> list[Launch]:
    """The traced launches (deduplicated, in order) that a graded call may not run."""
    return [x for x in dict.fromkeys(launches) if not own.accepts(x)]
