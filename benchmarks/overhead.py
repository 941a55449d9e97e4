"""Where the harness's time per timed call goes: one table per contestant and shape.

    python3 benchmarks/overhead.py [--rounds 20] [--sets 12] [--only ex04_reduction ...]

For the reference solution and the no-op baseline of a few exercises, it runs the grader's own
timing rounds by hand (the same Worker, Instance, fresh Arena per round and requests as
grader.timing.run_benchmark) and splits each round into: the resume (the walk for the worker's
processes before the clock, then the signals, whose part after the first SIGCONT is inside it) and
the pause signal (outside it), the untimed ``map`` request before it (``premap``: unmapping
the last round's arena and mapping this one), the worker's phases in the timed request (``map``:
taking the mapped buffers, queueing the calls, the device synchronisation, reading the events)
and the request's transport. ``outside`` is the round's wall time (as grader.timing takes it: from the
first SIGCONT to the reply) not covered by the call events, per call:
the harness overhead the wall-clock bound has to allow for. Then it times CUDA IPC itself
(ipcGetMemHandle in the parent, ipcOpenMemHandle + close in a fresh process) for a few sizes.

Prints medians in microseconds (us). Needs a GPU.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHAPES = [("ex07_softmax", {"rows": 4096, "cols": 4096}), ("ex04_reduction", {"n": 1 << 24}),
          ("ex01_vector_add", {"n": 1 << 28})]


def _med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def rounds_table(rounds: int, nsets: int, flush: bool, reuse: bool = False, only: tuple[str, ...] = (),
                 pin: int | None = None) -> list[str]:
    """The per-part table for SHAPES (or those of the exercises in ``only``). ``reuse``: map one
    arena in the first round and time every round on it (inputs rewritten in place), instead of a
    fresh arena per round as grading does; ``events`` then says what the fresh mappings cost.
    ``pin``: an experiment, not what grading does: every thread of each worker is pinned to that
    CPU, where a SCHED_IDLE busy loop keeps the CPU awake while the worker is stopped (the resume's
    wake-up from a deep idle state lands inside the timed window)."""
    from grader.cases import Case
    from grader.device import detect
    from grader.grade import BASELINE_SUBMISSION
    from grader.instance import Instance, load_oracle
    from grader.sandbox.buffers import Arena, CudaBackend
    from grader.sandbox.supervisor import Worker, WorkerConfig
    from grader.spec import load_spec

    dev = detect()
    backend = CudaBackend()
    rows = []
    for name, dims in SHAPES:
        if only and name not in only:
            continue
        spec = load_spec(ROOT / "exercises" / name / "spec.toml")
        oracle = load_oracle(spec)
        bench = next(b for b in spec.benchmarks if b.as_dict() == dims)
        rng = random.Random(1)

        def case(seed: int) -> Case:
            return Case(bench.dims, tuple((n, bench.distribution(n)) for n in spec.drawn), seed, "benchmark", bench.types)

        sets = [Instance(spec, backend, oracle, case(rng.randrange(2**32))) for _ in range(nsets)]
        for label, folder in (("reference", ROOT / "solutions" / name), ("noop", BASELINE_SUBMISSION)):
            w = Worker(WorkerConfig("cuda", folder, spec.compile_options, spec.arg_order, 120, 30))
            spinner = None
            try:   # the worker and the busy loop end even when a shape fails (out of memory, say)
                assert w.ensure().ok
                spinner = _pin(w.proc.pid, pin) if pin is not None else None
                warm = Arena(backend, sum(s.arena_bytes for s in sets))
                for s in sets:
                    s.bind(warm)
                w.request({"op": "warmup", "sets": [s.descriptors() for s in sets], "ms": 25}, 60)
                close, held = [warm.handle], warm   # freed once the worker unmapped it (grader.timing)
                for s in sets:
                    s.unbind()
                parts: dict[str, list[float]] = {k: [] for k in
                                                 ("premap", "resume", "map", "queue", "sync", "read", "transport",
                                                  "pause", "events", "outside")}
                for r in range(rounds):
                    order = list(range(nsets))
                    if not reuse or r == 0:
                        arena = Arena(backend, sum(s.arena_bytes for s in sets))   # fresh buffers, as grading does
                        for s in sets:
                            s.place(arena)
                        descs = [s.descriptors() for s in sets]
                        w.resume()   # the untimed map request, then the inputs written while it is stopped
                        mapped = w.request({"op": "map", "sets": descs, "close": close}, 60)
                        w.pause()
                        assert mapped.ok, mapped.message
                        held.free()
                        close, held = [arena.handle], arena
                        parts["premap"].append(mapped.wall_s * 1e6)
                    for s in sets:
                        s.write()
                    t0 = time.perf_counter()
                    continued = w.resume()   # the grader's clock starts here, at the first SIGCONT
                    t1 = time.perf_counter()
                    out = w.request({"op": "time", "order": order,   # on the sets just mapped, as grader.timing does
                                     "flush_bytes": 2 * dev.l2_bytes if flush else 0}, 60)
                    t2 = time.perf_counter()
                    w.pause()
                    t3 = time.perf_counter()
                    if not reuse:
                        for s in sets:
                            s.unbind()
                    assert out.ok, out.message
                    ph = out.data["phases_ms"]
                    ev = sum(out.data["times_ms"])
                    wall = (t1 - continued + out.wall_s) * 1e3   # as grader.timing's clock: first SIGCONT to reply
                    parts["resume"].append((t1 - t0) * 1e6)
                    for k in ("map", "queue", "sync", "read"):
                        parts[k].append(ph[k] * 1e3)
                    parts["transport"].append((out.wall_s * 1e3 - sum(ph.values())) * 1e3)
                    parts["pause"].append((t3 - t2) * 1e6)
                    parts["events"].append(ev / nsets * 1e3)
                    parts["outside"].append((wall - ev) / nsets * 1e3)
                if reuse:
                    for s in sets:
                        s.unbind()
            finally:
                w.resume()
                w.close()
                if spinner is not None:
                    spinner.kill()
                    spinner.wait()
            held.free()   # once the worker unmapped it
            rows.append(f"{name:16s} {str(dims):24s} {label:9s} sets={nsets:2d} {'reused' if reuse else 'fresh '} " +
                        (f"pin={pin} " if pin is not None else "") +
                        " ".join(f"{k}={_med(v):8.1f}" for k, v in parts.items()))
        for s in sets:
            s.free()
        import cupy
        cupy.get_default_memory_pool().free_all_blocks()
    return rows


_SPINNER = "import os\nos.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\nwhile True:\n    pass\n"


def _pin(pid: int, cpu: int) -> subprocess.Popen:
    """Pin every thread of process ``pid`` to ``cpu`` and start a SCHED_IDLE busy loop there."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        os.sched_setaffinity(int(task.name), {cpu})
    spinner = subprocess.Popen([sys.executable, "-c", _SPINNER])
    os.sched_setaffinity(spinner.pid, {cpu})
    return spinner


_OPENER = r"""
import sys, time, cupy
handles = [bytes.fromhex(h) for h in sys.argv[1:]]
cupy.cuda.runtime.free(cupy.cuda.runtime.malloc(256))
t = []
for h in handles:
    a = time.perf_counter(); p = cupy.cuda.runtime.ipcOpenMemHandle(h); b = time.perf_counter()
    cupy.cuda.runtime.ipcCloseMemHandle(p); c = time.perf_counter()
    t.append(((b - a) * 1e6, (c - b) * 1e6))
print(" ".join(f"{o:.1f}/{c:.1f}" for o, c in t))
"""


def ipc_table() -> list[str]:
    import cupy
    rows = []
    for size in (1 << 20, 2 << 20, 64 << 20, 1 << 30):
        mems, handles, t_alloc, t_handle = [], [], [], []
        for _ in range(5):
            a = time.perf_counter()
            m = cupy.cuda.memory.Memory(size)
            b = time.perf_counter()
            h = bytes(cupy.cuda.runtime.ipcGetMemHandle(m.ptr)).hex()
            c = time.perf_counter()
            mems.append(m)
            handles.append(h)
            t_alloc.append((b - a) * 1e6)
            t_handle.append((c - b) * 1e6)
        res = subprocess.run([sys.executable, "-c", _OPENER, *handles], capture_output=True, text=True)
        rows.append(f"ipc {size >> 20:5d} MiB: cudaMalloc {_med(t_alloc):7.1f} us, ipcGetMemHandle {_med(t_handle):6.1f} us, "
                    f"open/close in worker (us) {res.stdout.strip() or res.stderr.strip()[-300:]}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--sets", type=int, default=12, help="input sets (calls) per round, besides 3")
    ap.add_argument("--fresh-vs-reused", action="store_true",
                    help="instead: at --sets calls per round, each shape's rounds on fresh arenas (as grading "
                         "times) and on one reused arena, side by side (why the grader's times run above "
                         "benchmarks/bench_references.py's)")
    ap.add_argument("--only", nargs="+", default=(), metavar="EXERCISE",
                    help=f"only these exercises' shapes (of {', '.join(n for n, _ in SHAPES)})")
    ap.add_argument("--pin", type=int, metavar="CPU",
                    help="experiment: pin each worker to this CPU, kept awake by a SCHED_IDLE busy loop")
    args = ap.parse_args()
    names = [n for n, _ in SHAPES if not args.only or n in args.only]
    if args.fresh_vs_reused:
        for name in names:
            for reuse in (False, True, False, True):   # alternated: drifts hit both alike
                _print_rows(lambda: rounds_table(args.rounds, args.sets, True, reuse, (name,), args.pin), name, args.sets,
                            keep=" reference ")
        return
    print("\n".join(ipc_table()), flush=True)
    for nsets in sorted({3, args.sets}):
        for name in names:
            _print_rows(lambda: rounds_table(args.rounds, nsets, True, only=(name,), pin=args.pin), name, nsets)


def _print_rows(table: Callable[[], list[str]], name: str, nsets: int, keep: str = "") -> None:
    """Print one shape's rows as soon as they are measured; a shape whose sets do not fit in device
    memory is named and skipped (the next shapes still run)."""
    import cupy
    try:
        rows = table()
    except cupy.cuda.memory.OutOfMemoryError:
        rows = [f"{name}: skipped at {nsets} sets: out of device memory"]
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        if "MemoryAllocation" not in str(exc):
            raise
        rows = [f"{name}: skipped at {nsets} sets: out of device memory ({exc})"]
    finally:
        cupy.get_default_memory_pool().free_all_blocks()
    print("\n".join(r for r in rows if keep in r or "skipped" in r), flush=True)


if __name__ == "__main__":
    main()
