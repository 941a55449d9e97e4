"""The worker process: the only place where submission code runs (the trusted parent never imports it).

Started by :class:`grader.sandbox.supervisor.Worker` as ``python -m grader.sandbox.worker FD BACKEND``
with a connected socket on file descriptor FD. It serves requests one at a time:

- ``preload``: compile and load the submission's ``.cu`` files inside the kernel tracer's own
  window (its own modules, before any of its code runs) and reply with their PTX;
- ``load``: import its ``solution.py``, report the kernels' resources;
- ``run``: map the argument buffers, call ``solve`` once, synchronise the whole device;
- ``warmup``: call ``solve`` on each input set in turn for a number of milliseconds;
- ``map``: unmap the previous round's buffers and map this round's fresh ones (before the
  parent writes the inputs into them), and build solve's arguments for them;
- ``time``: flush L2 once, then time one ``solve`` call per input set (those of the last ``map``),
  back to back, with CUDA events between them on the current stream (host: ``perf_counter``);
- ``release``: unmap buffers the parent is about to free.

The kernel tracer (when the grader injected one, see :mod:`grader.sandbox.kernel_trace`) writes
each kernel's name at its launch; before each reply but a ``time`` request's it is flushed, which
ends the request in the trace (the flush stays out of the timed window).

Nothing the worker reports is trusted: the parent checks outputs, guards and inputs itself, and
bounds reported times with its own wall clock.
"""
from __future__ import annotations

import errno
import faulthandler
import os
import importlib.util
import json
import inspect
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from grader.sandbox import protocol
from grader.sandbox.buffers import Descriptor, Mapper


SPIN_POLLS = 10000 if (os.cpu_count() or 1) >= 4 else 0   # see supervisor.SPIN_S


class Failure(Exception):
    """A classified error to send back: ``kind`` is one of the supervisor's failure kinds."""

    def __init__(self, kind: str, message: str, detail: str = ""):
        super().__init__(message)
        self.kind, self.message, self.detail = kind, message, detail


def classify(exc: BaseException, submission: Path | None) -> Failure:
    """Map an exception raised by submission code to (kind, one-line message, traceback tail)."""
    name = type(exc).__name__
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else name
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if submission is not None:
        own = [f for f in frames if Path(f.filename).resolve().parent == submission]
        if own:
            where = f" (at {Path(own[-1].filename).name}:{own[-1].lineno} in {own[-1].name})"
    detail = "".join(traceback.format_exception(exc)[-12:])
    if isinstance(exc, OSError) and exc.errno == errno.EFBIG:
        from grader.sandbox.supervisor import OUTPUT_LIMIT_BYTES
        return Failure("output_limit", f"printed more than the worker's output limit of "
                       f"{OUTPUT_LIMIT_BYTES >> 20} MiB (remove debugging prints from solve and the kernel)", detail)
    if name == "CompileError":
        return Failure("compile_error", str(exc), detail)
    if name == "OutOfMemoryError" and "limit set to" in text:
        return Failure("device_memory_limit", f"{text}{where}: over the exercise's device-memory limit "
                       "([limits] device_memory_gib)", detail)
    if name == "OutOfMemoryError" or isinstance(exc, MemoryError):
        return Failure("out_of_memory", f"out of memory: {text}{where}", detail)
    if name in ("CUDARuntimeError", "CUDADriverError"):
        lowered = text.lower()
        kind = "illegal_address" if "illegal" in lowered or "misaligned" in lowered else "cuda_error"
        return Failure(kind, f"{text}{where}", detail)
    return Failure("exception", f"{name}: {text}{where}", detail)


class Server:
    def __init__(self, sock: socket.socket, backend: str):
        self.sock, self.backend = sock, backend
        self.mapper = Mapper(backend)
        self.solve: Callable[..., Any] | None = None
        self.submission: Path | None = None
        self._flush: tuple[int, int] | None = None   # (device pointer, bytes) of the L2 flush buffer
        self._bound: list[list[Any]] = []    # solve's arguments per input set, built by the last map
        self._events: list[Any] = []         # CUDA events reused by timed rounds
        self._trace_flush: Callable[[], int] | None = None
        self._own_window: Callable[[int], int] | None = None
        self._trace_request: Callable[[], int] | None = None   # marks each request's start in the trace
        self._window_end: Callable[[], int] | None = None      # marks a timed round's synchronisation
        self.preloaded = False
        if backend == "cuda":
            import cupy
            self.cupy = cupy
            # bound before any submission code runs: replacing the module attribute later does not
            # skip the L2 flush of timed rounds, and the flush buffer is a plain cudaMalloc, never
            # CuPy's allocator, which a submission can replace (red-team pass 20: an allocator that
            # maps one physical chunk over the whole buffer made the flush touch 2 MiB)
            self._memset_async = cupy.cuda.runtime.memsetAsync
            self._malloc, self._free = cupy.cuda.runtime.malloc, cupy.cuda.runtime.free
            tracer = os.environ.get("CUDA_INJECTION64_PATH")   # grader.sandbox.kernel_trace
            if tracer:
                import ctypes
                library = ctypes.CDLL(tracer)
                self._trace_flush = library.grader_trace_flush
                self._own_window = library.grader_trace_own_window
                self._trace_request = library.grader_trace_request
                self._window_end = library.grader_trace_window_end

    # -- helpers --------------------------------------------------------------------------------
    def arrays(self, descs: list[dict[str, Any]]) -> list[Any]:
        """solve's arguments: mapped arrays, and scalars as numpy scalars of their dtype."""
        import numpy as np
        return [np.dtype(d["dtype"]).type(d["scalar"]) if "scalar" in d else self.mapper.open(Descriptor.from_json(d))
                for d in descs]

    def sync(self) -> None:
        if self.backend == "cuda":
            self.cupy.cuda.runtime.deviceSynchronize()

    def call(self, args: list[Any]) -> None:
        if self.solve is None:
            raise Failure("grader_error", "run before load")
        self.solve(*args)

    # -- requests -------------------------------------------------------------------------------
    def op_hello(self, req: dict[str, Any]) -> dict[str, Any]:
        info: dict[str, Any] = {"python": sys.version.split()[0]}
        if self.backend == "cuda":
            info["cupy"] = self.cupy.__version__
            self.cupy.cuda.runtime.free(self.cupy.cuda.runtime.malloc(256))  # create the context now
            # The grader's own kind of work, before any submission code runs: the libraries this
            # maps are the baseline the parent's forbidden-library check subtracts.
            cupy = self.cupy
            kernel = cupy.RawModule(code='extern "C" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }',
                                    backend="nvrtc").get_function("k")
            x = cupy.zeros(32, dtype=cupy.float32)
            kernel((1,), (32,), (x,))
            float((x * 2).sum())
        return info

    def op_preload(self, req: dict[str, Any]) -> dict[str, Any]:
        """Compile and load the submission's ``.cu`` files (its own modules, see
        ``grader.kernel.preload``) inside the kernel tracer's one-time own window. Before any of its
        code runs, and before its folder is on sys.path (where a module named like one that
        compiling imports could run inside the window); the reply is sent before the submission's
        code can run, so the PTX it carries is the code those modules hold."""
        if self.preloaded:
            raise Failure("grader_error", "preload twice")
        import grader.kernel as gk
        gk.configure(req.get("options", []), req.get("arch"))
        self.preloaded = True
        if self.backend != "cuda":
            return {"ptx": {}, "failed": {}}
        if self._own_window is not None:
            self._own_window(1)
        def note(rel: str) -> None:   # read back only if the compiler crashes (see protocol.compiling_when_crashed)
            print(f"{protocol.PRELOAD_NOTE}{json.dumps(rel)}", file=sys.stderr, flush=True)   # one line, whatever the name
        print(protocol.PRELOAD_START, file=sys.stderr, flush=True)
        try:
            ptx, failed = gk.preload(Path(req["dir"]).resolve(), note)
        finally:
            if self._own_window is not None:
                self._own_window(0)
        return {"ptx": ptx, "failed": failed}

    def op_load(self, req: dict[str, Any]) -> dict[str, Any]:
        folder = Path(req["dir"]).resolve()
        path = folder / "solution.py"
        if not self.preloaded:
            raise Failure("grader_error", "load before preload")
        if not path.is_file():
            raise Failure("bad_submission", f"{path}: no solution.py (a submission is a folder with kernel.cu and solution.py)")
        import grader.kernel as gk
        cap = int(req.get("device_memory_bytes", 0))
        if cap and self.backend == "cuda":  # a clear error for honest over-allocation; the parent's
            self.cupy.get_default_memory_pool().set_limit(size=cap)  # NVML watch is the real cap
        sys.path.insert(0, str(folder))
        self.submission = folder
        spec = importlib.util.spec_from_file_location("solution", path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules["solution"] = module
        limit = float(req.get("limit_s") or 0)
        if limit > 0:  # a hang at import: the parent's message can say where (the stacks go to the log)
            faulthandler.dump_traceback_later(max(limit * 0.8, limit - 2.0))
        try:
            spec.loader.exec_module(module)  # type: ignore[union-attr]
        except SyntaxError as exc:
            raise Failure("bad_submission", f"solution.py:{exc.lineno}: syntax error: {exc.msg}") from None
        except Failure:
            raise
        except BaseException as exc:  # noqa: BLE001 - any failure of untrusted code is reported
            failure = classify(exc, folder)
            if failure.kind == "exception":
                failure = Failure("import_error", f"importing solution.py failed: {failure.message}", failure.detail)
            raise failure from None
        finally:
            faulthandler.cancel_dump_traceback_later()
        solve = getattr(module, "solve", None)
        if not callable(solve):
            raise Failure("bad_submission", f"{path}: defines no function solve(*inputs, *outputs); fix: define solve "
                          f"at the top level of solution.py (see the template)")
        nargs = int(req.get("nargs", 0))
        try:
            inspect.signature(solve).bind(*range(nargs))
        except TypeError:
            raise Failure("bad_submission", f"{path}: solve{inspect.signature(solve)} cannot take the "
                          f"{nargs} arguments {req.get('arg_names')}") from None
        except ValueError:
            pass
        self.solve = solve
        kernels = []
        if self.backend == "cuda":
            for src, mod in gk.loaded:
                for r in gk.resources(src, mod):
                    kernels.append({"file": src.name, **r.__dict__})
        return {"kernels": kernels}

    def op_run(self, req: dict[str, Any]) -> dict[str, Any]:
        args = self.arrays(req["args"])
        t0 = time.perf_counter()
        self.call(args)
        self.sync()
        return {"seconds": time.perf_counter() - t0}

    def op_warmup(self, req: dict[str, Any]) -> dict[str, Any]:
        sets = [self.arrays(s) for s in req["sets"]]
        end = time.perf_counter() + float(req["ms"]) / 1e3
        calls = 0
        while calls < max(2, len(sets)) or time.perf_counter() < end:
            self.call(sets[calls % len(sets)])
            self.sync()
            calls += 1
        return {"calls": calls}

    def op_map(self, req: dict[str, Any]) -> dict[str, Any]:
        """Unmap the previous round's buffers (``close``) and map this round's (``sets``) ahead of
        its timed request, which then finds them mapped (the parent writes the inputs in between)."""
        self.mapper.release(list(req.get("close", ())))
        self._bound = []
        self._bound = [self.arrays(s) for s in req["sets"]]
        return {}

    def op_time(self, req: dict[str, Any]) -> dict[str, Any]:
        """One timed round on the input sets of the last ``map`` (or on ``sets``, when the request
        carries them; ``close`` is still honoured): flush L2 once, then call ``solve`` on each set
        in ``order`` back to back, with an event between consecutive calls on the current stream
        (host: ``perf_counter``), and synchronise the whole device. ``times_ms`` are the gaps
        between consecutive events: each call's time, launch gaps included. ``phases_ms`` (map,
        queue, sync, read) is diagnostic only."""
        t_in = time.perf_counter()
        self.mapper.release(list(req.get("close", ())))
        sets = [self.arrays(s) for s in req["sets"]] if "sets" in req else self._bound
        order = [int(i) for i in req["order"]]
        if not sets or any(not 0 <= k < len(sets) for k in order):
            raise Failure("grader_error", f"timed request for sets {order} with {len(sets)} mapped")
        t_mapped = time.perf_counter()
        if self.backend != "cuda":
            marks = [time.perf_counter()]
            for k in order:
                self.call(sets[k])
                marks.append(time.perf_counter())
            return {"times_ms": [(b - a) * 1e3 for a, b in zip(marks, marks[1:])]}
        cupy = self.cupy
        flush_bytes = int(req.get("flush_bytes", 0))
        if flush_bytes and (self._flush is None or self._flush[1] != flush_bytes):
            if self._flush is not None:
                self._free(self._flush[0])
                self._flush = None
            self._flush = (self._malloc(flush_bytes), flush_bytes)
        stream = cupy.cuda.get_current_stream()
        while len(self._events) < len(order) + 1:
            self._events.append(cupy.cuda.Event())
        events = self._events[:len(order) + 1]
        if flush_bytes:
            self._memset_async(self._flush[0], len(order) & 0xFF, flush_bytes, stream.ptr)
        try:
            events[0].record(stream)
            for i, k in enumerate(order):
                self.call(sets[k])
                events[i + 1].record(stream)
        finally:   # also when solve raised: the W line is written whatever happened
            t_queued = time.perf_counter()
            # the tracer closes the window (W; GPU work started from then on, by any thread, is an L
            # line, which fails the round), then synchronises the own modules' context itself
            status = self._window_end() if self._window_end is not None else 0
        if status > 0:   # a CUDA error of the timed calls (-1: the tracer did not start)
            raise cupy.cuda.driver.CUDADriverError(status)
        self.sync()
        t_synced = time.perf_counter()
        times = [cupy.cuda.get_elapsed_time(a, b) for a, b in zip(events, events[1:])]
        t_out = time.perf_counter()
        return {"times_ms": times, "phases_ms": {"map": (t_mapped - t_in) * 1e3, "queue": (t_queued - t_mapped) * 1e3,
                                                 "sync": (t_synced - t_queued) * 1e3, "read": (t_out - t_synced) * 1e3}}

    def op_release(self, req: dict[str, Any]) -> dict[str, Any]:
        self._bound = []
        self.mapper.release(list(req["handles"]))
        return {}

    def serve(self) -> None:
        import select
        while True:
            # poll for the next request without sleeping for a while (SPIN_POLLS select calls, about
            # 10 ms of CPU, however long the parent keeps this process stopped in between): a timed
            # request then starts microseconds after it is sent instead of after a wake-up
            for _ in range(SPIN_POLLS):
                if select.select([self.sock], [], [], 0)[0]:
                    break
            try:
                req = protocol.recv(self.sock)
            except protocol.ProtocolError:
                return
            op = req.get("op")
            if op == "exit":
                return
            if self._trace_request is not None:
                self._trace_request()
            handler = getattr(self, f"op_{op}", None)
            try:
                if handler is None:
                    raise Failure("grader_error", f"unknown request {op!r}")
                reply = {"ok": True, **handler(req)}
            except Failure as f:
                reply = {"ok": False, "kind": f.kind, "message": f.message, "detail": f.detail}
            except BaseException as exc:  # noqa: BLE001
                f = classify(exc, self.submission)
                reply = {"ok": False, "kind": f.kind, "message": f.message, "detail": f.detail}
            sys.stdout.flush()
            sys.stderr.flush()
            if self._trace_flush is not None and op != "time":   # ends the request in the trace; never
                self._trace_flush()                                # inside a timed window
            protocol.send(self.sock, reply)


def main(argv: list[str]) -> None:
    if os.environ.pop("GRADE_WORKER_TRUSTED", None):   # the reference or the baseline: another
        from grader.sandbox.watch import protect_parent   # worker must not read its files through
        protect_parent()                                  # /proc/PID/root (see sandbox.isolation)
    fd, backend = int(argv[0]), argv[1]
    sock = socket.socket(fileno=fd)
    Server(sock, backend).serve()


if __name__ == "__main__":
    main(sys.argv[1:])
