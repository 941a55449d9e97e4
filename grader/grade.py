"""The grading pipeline: spec -> cases -> worker -> compare -> timing -> score -> GradeResult, in
the phases of :func:`grade` (load, correctness, timing, score, review flags).

Data flows one way. The parent draws inputs, owns every buffer,
runs the float64 oracle and compares; the submission only ever runs inside a worker process.
"""
from __future__ import annotations

import contextlib
import math
import random
import re
import time
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from grader import scoring
from grader.calibration import Calibration
from grader.cases import Case, Profile, case_strategy, combine_seed, edge_cases, hidden_counts, parse_token
from grader.compare import index_overflow_hint
from grader.device import Ceilings, ClockSampler, ClockState, DeviceInfo, arch_refusal, foreign_gpu_processes, gpu_lock
from grader.instance import Instance, load_oracle
from grader.kernel import resources_from_reply
from grader.sandbox.buffers import Arena, Backend, DeviceMemoryError
from grader.ptx import parse as parse_ptx
from grader.sandbox.kernel_trace import KernelPolicy, OwnKernels, base_name
from grader.sandbox.supervisor import KIND_TEXT, Outcome, Worker, WorkerConfig, times_continued
from grader.sandbox.watch import GpuDrain
from grader.spec import Benchmark, Spec
from grader.static import cuda_sources, include_folders, missing_ptx, static_check, strip_comments
from grader.timing import (BASELINE, OUTSIDE_SHARE, REFERENCE, UNEVEN_RATIO, Binding, Contestant, Rig, ShapeResult,
                           StopPolicy, run_benchmark)

BASELINE_SUBMISSION = Path(__file__).resolve().parent / "sandbox" / "noop"
# Failures while timing that fail correctness too (see grader.timing.ContestantTiming.failure_kind).
TIMING_FAILS_CORRECTNESS = ("wrong", "forbidden_library", "foreign_kernel", "tampered", "host_memory_limit",
                            "device_memory_limit", "malformed_times")
# not the submission's own work, or it tampered with the grader's processes: no further cases
REFUSED_KINDS = ("forbidden_library", "foreign_kernel", "tampered")
MAX_TIMEOUTS = 2       # time-outs before no further case is run
MAX_FAILED_RUNS = 25   # failing runs (edge cases and shrinking steps together) before stopping
CASE_BUDGET_SHARE = 0.6  # share of [limits] total_s the correctness cases may use
# Calls per timed round (= input sets): the harness's own time per round outside the call events
# (request and reply, mapping the arena, the L2 flush, the final synchronisation; measured with
# benchmarks/overhead.py, see benchmarks/RESULTS.md) spread over enough calls.
HARNESS_ROUND_MS = 0.6
TARGET_OVERHEAD_MS = 0.05
MIN_SETS, MAX_SETS = 3, 16
MEMORY_SHARE = 0.35      # of the device memory, for all input sets of one shape together
FREE_SHARE = 0.8         # of the device memory free when a shape's timing starts (set_bytes has its own margin)


# -- results -------------------------------------------------------------------------------------
class GradeStatus(StrEnum):
    """:attr:`GradeResult.status`, as the reports write it."""
    GRADED = "graded"
    NOT_GRADED = "not_graded"   # then GradeResult.reason and reason_kind say why


class CaseStatus(StrEnum):
    """:attr:`CaseResult.status` of a call that returned; a call that failed has its worker failure
    kind instead (sandbox.supervisor.KIND_TEXT)."""
    PASS = "pass"
    FAIL = "fail"   # a wrong output, a damaged guard or input


@dataclass(frozen=True)
class CaseResult:
    """One correctness case: ``status`` is "pass", "fail" (wrong output, guard or input damage) or
    a worker failure kind (see sandbox.supervisor.KIND_TEXT); ``details`` are per-output mismatch
    summaries; ``seconds`` is the parent's wall time for the call."""
    token: str
    description: str
    origin: str
    size: int
    status: str   # a CaseStatus, or a worker failure kind
    message: str = ""
    details: tuple[str, ...] = ()
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == CaseStatus.PASS


@dataclass(frozen=True)
class BenchResult:
    """One benchmark shape: the submission's and the reference's timing (ms), throughput in GB/s
    and TFLOP/s from the spec's minimum bytes/FLOPs, ``ceiling_fraction``: the roofline time
    (:meth:`Grader.floor_ms`, from the measured ceilings) over the submission's time, and the
    ratio t_reference / t_submission on the basis scoring used."""
    name: str
    dims: dict[str, int]
    bytes: float
    flops: float | None
    submission: ShapeResult
    reference: ShapeResult | None
    calibrated_ms: float | None
    gbps: float | None
    tflops: float | None
    ceiling_fraction: float | None
    clock: ClockState | None
    calls_per_round: int = 0

    @property
    def time_ms(self) -> float | None:
        return self.submission.time_ms

    @property
    def reference_ms(self) -> float | None:
        """The reference time the ratio uses: timed side by side, else calibrated, else None."""
        return self.reference.time_ms if self.reference and self.reference.time_ms else self.calibrated_ms

    @property
    def ratio(self) -> float | None:
        ref = self.reference_ms
        if not ref or self.time_ms is None:
            return None
        return ref / self.time_ms if self.time_ms > 0 else math.inf


@dataclass(frozen=True)
class GradeResult:
    """Everything one grade produced; ``status`` is "graded" or "not_graded" (then ``reason``)."""
    exercise: str
    title: str
    submission: str
    status: GradeStatus
    reason: str
    reason_kind: str
    profile: str
    seed: int
    secret_used: bool
    device: DeviceInfo | None
    ceilings: Ceilings | None
    kernels: tuple[dict[str, Any], ...]
    cases: tuple[CaseResult, ...]
    smallest_failure: CaseResult | None
    repro: str | None
    benchmarks: tuple[BenchResult, ...]
    score: scoring.Score
    flags: tuple[str, ...]
    hidden_cases: int
    hidden_benchmarks: int
    worker_restarts: int
    seconds: float
    started: str
    versions: dict[str, str] = field(default_factory=dict)
    isolation: str = ""   # the submission worker's filesystem isolation, in one line (sandbox.isolation)
    kernel_profile: dict[str, Any] | None = None   # grade --profile: grader.profiling.to_dict, with "agreement"

    @property
    def graded(self) -> bool:
        return self.status == GradeStatus.GRADED

    @property
    def correct(self) -> bool:
        return self.graded and bool(self.cases) and all(c.passed for c in self.cases)


@dataclass(frozen=True)
class GradeOptions:
    """How to grade: the profile, the seed (mixed with ``secret`` in grading mode), the backend
    ("cuda" or "host"), an optional single case to re-run, the reference solution folder to time
    side by side (None: use the calibration), and whether to time at all."""
    profile: Profile
    seed: int = 0
    secret: str | None = None
    backend: str = "cuda"
    case_token: str | None = None
    reference: Path | None = None
    benchmark: bool = True
    policy: StopPolicy = field(default_factory=StopPolicy)
    sets: int | None = None   # input sets per benchmark shape; None: chosen per shape (Grader.sets_for)
    hide: tuple[Path, ...] = ()   # more folders the submission's worker must not see (batch: all submissions)
    isolate: bool = True          # False only for the grader's own generated submissions (negative controls)
    accept_implausible: bool = False   # instructor: keep performance points of a flagged result


class Progress:
    """Callbacks for long work; the terminal report implements them with a progress bar."""

    def phase(self, name: str, total: int | None = None) -> None: ...
    def advance(self, text: str = "") -> None: ...
    def done(self) -> None: ...


# -- the grader ------------------------------------------------------------------------------------
class Grader:
    """Grades one submission against one spec. Use :func:`grade`."""

    def __init__(self, spec: Spec, submission: Path, options: GradeOptions, backend: Backend,
                 device: DeviceInfo | None, ceilings: Ceilings | None, calibration: Calibration,
                 progress: Progress):
        self.spec, self.submission, self.opt = spec, submission.resolve(), options
        self.backend, self.xp = backend, backend.xp
        self.device, self.ceilings, self.calibration = device, ceilings, calibration
        self.progress = progress
        self.oracle = load_oracle(spec)
        self.seed = combine_seed(options.seed, options.secret)
        self.arg_names = spec.arg_order
        self.kernel_policy = self._kernel_policy() if backend.name == "cuda" else None
        self.worker = self.new_worker(self.submission, trusted=not options.isolate)
        self.t0 = time.perf_counter()
        self.budget_spent = False   # correctness stopped early: the case share of total_s ran out
        self.isolation_failure: Outcome | None = None   # a restart of the worker could not be isolated
        self.gpu_sharers: set[str] = set()   # "PID NAME" of other processes on the GPU when it stayed busy

    def hidden_folders(self) -> tuple[str, ...]:
        """What the submission's worker must not see: the course root (exercises, solutions,
        calibration), the reference solution, and the folders the caller names (batch: every
        student's submissions)."""
        course = self.spec.directory.resolve().parent.parent
        extra = (self.opt.reference,) if self.opt.reference is not None else ()
        return tuple(str(Path(p).resolve()) for p in (course, *extra, *self.opt.hide))

    def _kernel_policy(self) -> KernelPolicy:
        """What decides the kernels a graded call may run (see :class:`KernelPolicy`): the kernels
        of the modules the worker compiles from the submission's ``.cu`` files with the exercise's
        options, and the spec's ``allowed_kernels``."""
        files = cuda_sources(self.submission)
        return KernelPolicy(tuple(strip_comments(f.read_text(errors="replace"), f.name) for f in files),
                            self.submission.resolve(), self.spec.allowed_kernels, self.spec.forbidden_headers,
                            include_folders(self.spec.compile_options))

    @property
    def own_kernels(self) -> OwnKernels:
        """The kernels of the submission's own (of its worker's last start; none before it started)."""
        return self.worker.own_kernels or OwnKernels(frozenset(), frozenset())

    def new_worker(self, folder: Path, trusted: bool = False, label: str = "") -> Worker:
        """A worker for ``folder`` with this exercise's limits: the submission's (isolated, its
        kernels checked) or, ``trusted``, the reference's or the baseline's (``label`` names it in
        messages, e.g. "the baseline worker")."""
        lim = self.spec.limits
        return Worker(WorkerConfig(self.backend.name, folder, self.spec.compile_options, self.arg_names,
                                   lim.compile_s, lim.case_s, int(lim.host_memory_gib * 2**30),
                                   int(lim.device_memory_gib * 2**30), self.spec.forbidden_libraries,
                                   () if trusted else self.hidden_folders(), trusted,
                                   None if trusted else self.kernel_policy, label, arch=self.spec.arch))

    # -- correctness ------------------------------------------------------------------------------
    def release(self, instance: Instance, *workers: Worker | None) -> Outcome | None:
        """Unmap the instance's buffers in each live worker, then free them. Returns the first
        failure of an unmapping, else None: a refusal (a foreign kernel, say, that ran after solve
        returned), or a worker that crashed or failed there (an honest worker never does: one that
        exits after a passed case to be started afresh, with a fresh unchecked load, fails it)."""
        refused = None
        for w in workers:
            if w is not None and w.proc is not None:   # not killed by the grader: it must answer
                out = w.request({"op": "release", "handles": instance.handles}, 30)
                if not out.ok and refused is None:
                    refused = out
        instance.free()
        return refused

    def run_case(self, case: Case) -> CaseResult:
        base = dict(token=case.token, description=case.describe(self.spec), origin=case.origin, size=case.size())
        start = self.worker.ensure()
        if not start.ok:
            if start.kind == "isolation":   # the machine's: ends the grade "not graded" (see grade())
                self.isolation_failure = start
            return CaseResult(status=start.kind, message=start.message, **base)
        inst = Instance(self.spec, self.backend, self.oracle, case)
        try:
            inst.reset()
            out = self.worker.request({"op": "run", "args": inst.descriptors()}, self.spec.limits.case_s,
                                      "[limits] case_s")
            if not out.ok:
                hint = index_overflow_hint(None, inst.large_arrays())  # a crash at 2^31+ elements
                result = CaseResult(status=out.kind, message=f"{KIND_TEXT[out.kind]}: {out.message}"
                                    + (f" ({hint})" if hint else ""),
                                    details=tuple(x for x in (out.detail,) if x), seconds=out.wall_s, **base)
            else:
                message, details = inst.check()
                result = CaseResult(status=CaseStatus.FAIL if message else CaseStatus.PASS, message=message,
                                    details=tuple(details), seconds=out.wall_s, **base)
        finally:
            late = self.release(inst, self.worker)
        if late is not None and result.status not in REFUSED_KINDS:
            return replace(result, status=late.kind, message=f"{KIND_TEXT[late.kind]}: {late.message}", details=())
        return result

    def correctness(self) -> list[CaseResult]:
        spec, profile = self.spec, self.opt.profile
        if self.opt.case_token:
            case = parse_token(spec, self.opt.case_token)
            self.progress.phase("re-running one case", 1)
            r = self.run_case(case)
            self.progress.advance(r.status)
            return [r]
        results: list[CaseResult] = []
        edges = edge_cases(spec, profile, self.seed)
        self.progress.phase("correctness", len(edges) + profile.examples)
        for case in edges:
            if self.exhausted(results):
                break
            results.append(self.run_case(case))
            self.progress.advance(results[-1].status)
        results.extend(self.property_cases(results))
        return results

    def exhausted(self, results: Sequence[CaseResult]) -> bool:
        """Stop running cases after repeated time-outs or crashes (each costs a worker restart
        and up to the call time limit), after a refusal (a forbidden library or a foreign kernel),
        or when the exercise's time budget is spent."""
        timeouts = sum(r.status == "timeout" for r in results)
        failures = sum(not r.passed for r in results)
        if any(r.status in REFUSED_KINDS for r in results) or self.isolation_failure is not None:
            return True   # the same on every case: one says it
        if time.perf_counter() > self.t0 + self.spec.limits.total_s * CASE_BUDGET_SHARE:
            self.budget_spent = True
            return True
        return timeouts >= MAX_TIMEOUTS or failures >= MAX_FAILED_RUNS

    def property_cases(self, earlier: Sequence[CaseResult]) -> list[CaseResult]:
        """Hypothesis-generated cases; on a failure hypothesis shrinks towards the smallest shape.
        Shrinking stops early when :meth:`exhausted` says so (we keep the smallest failure seen)."""
        from hypothesis import given, seed as hseed

        results: list[CaseResult] = []

        class _Failed(Exception):
            pass

        @hseed(self.seed)
        @self.opt.profile.hypothesis_settings()
        @given(case_strategy(self.spec, self.opt.profile))
        def prop(case: Case) -> None:
            if self.exhausted([*earlier, *results]):
                return  # out of budget: report the failures seen so far
            r = self.run_case(case)
            results.append(r)
            if len(results) <= self.opt.profile.examples:
                self.progress.advance(r.status)
            if not r.passed:
                raise _Failed(r.token)

        try:
            prop()
        except _Failed:
            pass
        except DeviceMemoryError:   # the machine's state, not a finding about the submission
            raise
        except Exception as exc:  # Flaky, Unsatisfiable...: keep what ran, note it
            if not any(not r.passed for r in results):
                results.append(CaseResult("", "hypothesis", "hypothesis", 0, "grader_error",
                                          f"case generation stopped: {type(exc).__name__}: {str(exc).splitlines()[0]}"))
        unique: dict[str, CaseResult] = {}
        for r in results:  # shrinking replays cases: keep each once
            unique.setdefault(r.token, r)
        return list(unique.values())

    # -- timing -----------------------------------------------------------------------------------
    def floor_ms(self, bench: Benchmark) -> float | None:
        """The roofline time of ``bench`` (ms): the larger of its minimum bytes over the measured
        copy bandwidth and, for a compute ceiling, its FLOPs over the measured rate (the roofline
        model: Williams, Waterman and Patterson, "Roofline", CACM 52(4), 2009: a GEMM with a
        short K is bound by its bytes, not its FLOPs); None without ceilings."""
        if self.ceilings is None:
            return None
        dims = bench.as_dict()
        rate = self.ceilings.for_kind(self.spec.ceiling)
        if not rate:
            return None
        bandwidth = self.ceilings.for_kind("memory")
        memory_ms = float(bench.bytes.evaluate(dims)) / (bandwidth * 1e6) if bandwidth else 0.0
        if self.spec.ceiling == "memory" or bench.flops is None:
            return memory_ms or None
        return max(memory_ms, float(bench.flops.evaluate(dims)) / (rate * 1e9))

    def sets_for(self, floor_ms: float | None, set_bytes: int) -> int:
        """Input sets (= calls per timed round) for a shape: enough that the harness's time per
        round is at most TARGET_OVERHEAD_MS per call, or OUTSIDE_SHARE of the roofline time, between
        MIN_SETS and MAX_SETS, and no more than MEMORY_SHARE of the device memory, or FREE_SHARE of
        what is free now, holds (``set_bytes``: one set's device bytes with the caller's margin)."""
        if self.opt.sets is not None:
            return self.opt.sets
        if floor_ms is None:
            return MIN_SETS
        n = math.ceil(HARNESS_ROUND_MS / max(TARGET_OVERHEAD_MS, OUTSIDE_SHARE * floor_ms))
        n = min(max(n, MIN_SETS), MAX_SETS)
        budget = [int(MEMORY_SHARE * self.device.memory_bytes)] if self.device is not None else []
        free = self.backend.free_bytes()
        if free is not None:   # other processes on the GPU (a class graded several to a GPU) hold the rest
            budget.append(int(FREE_SHARE * free))
        if budget:
            n = min(n, max(1, min(budget) // max(1, set_bytes)))
        return n

    def benchmark(self, bench: Benchmark, others: Sequence[tuple[str, Worker]], rng: random.Random) -> BenchResult:
        """Time one shape: the submission against ``others`` (the reference solution, when it is
        available, and the no-op baseline worker), see grader.timing."""
        spec = self.spec
        dims = bench.as_dict()

        def case(seed: int) -> Case:
            return Case(bench.dims, tuple((n, bench.distribution(n)) for n in spec.drawn), seed, "benchmark",
                        bench.types)

        first = Instance(spec, self.backend, self.oracle, case(rng.randrange(2**32)))
        floor = self.floor_ms(bench)
        calibrated = self.calibration.median_ms(spec.name, bench.name)
        n_sets = self.sets_for(floor, 4 * first.arena_bytes)
        sets = [first] + [Instance(spec, self.backend, self.oracle, case(rng.randrange(2**32)))
                          for _ in range(n_sets - 1)]

        def redraw() -> None:
            for inst in sets:
                inst.refresh(case(rng.randrange(2**32)))

        def bind() -> Binding:
            arena = Arena(self.backend, sum(inst.arena_bytes for inst in sets))
            for inst in sets:
                inst.place(arena)
            return Binding([inst.descriptors() for inst in sets], (arena.handle,), arena.free)

        def fill() -> None:
            for inst in sets:
                inst.write()

        def release() -> None:
            for inst in sets:
                inst.unbind()

        def verify(where: str) -> str | None:
            for k, inst in enumerate(sets):
                message, _ = inst.check()
                if message:
                    return f"{where}, input set {k}: {message}"
            return None

        drain = GpuDrain() if self.backend.name == "cuda" else None
        index = self.device.index if self.device is not None else 0

        def drain_wait(limit_s: float) -> float:
            waited = drain.wait(limit_s) if drain is not None else 0.0
            if math.isinf(waited):   # name whoever else is on the GPU, while they still are
                self.gpu_sharers.update(foreign_gpu_processes(index))
            return waited

        rig = Rig(n_sets, redraw, bind, verify, drain_wait, release, fill)
        contestants = [Contestant("submission", self.worker.request, self.worker.pause, self.worker.resume,
                                  self.worker.stop_now)]
        contestants += [Contestant(name, w.request, w.pause, w.resume, w.stop_now) for name, w in others]
        flush = 2 * self.device.l2_bytes if self.device is not None else 0
        windows: list[tuple[float, float]] = []
        sampler = ClockSampler(self.device.index) if self.device is not None else None
        basis = calibrated if calibrated is not None else floor

        def wait_for_gpu(lock: str) -> None:
            self.progress.phase(f"timing {bench.name}: waiting for the GPU, another grade on this machine is timing "
                                f"(lock {lock})", None)

        try:
            with gpu_lock(index, wait_for_gpu) if drain is not None else contextlib.nullcontext():
                self.progress.phase(f"timing {bench.name} ({n_sets} calls per round)", None)
                with sampler if sampler is not None else contextlib.nullcontext():
                    results = run_benchmark(contestants, rig, self.opt.policy, flush, spec.limits.case_s, rng,
                                            basis_ms=None if any(n == REFERENCE for n, _ in others) else basis,
                                            progress=lambda r: self.progress.advance(f"round {r}"),
                                            check_warmup=not any(t.inplace for t in spec.outputs),
                                            on_window=lambda a, b: windows.append((a, b)))
        finally:
            for inst in sets:
                inst.free()
            if self.backend.name == "cuda":
                import cupy
                cupy.get_default_memory_pool().free_all_blocks()
        clock = sampler.during(windows) if sampler is not None else None
        sub = results[0]
        ref = next((r for (name, _), r in zip(others, results[1:]) if name == REFERENCE), None)
        nbytes = float(bench.bytes.evaluate(dims))
        flops = float(bench.flops.evaluate(dims)) if bench.flops is not None else None
        t = sub.time_ms
        gbps = nbytes / t / 1e6 if t else None
        tflops = flops / t / 1e9 if t and flops else None
        frac = floor / t if floor and t else None   # the fraction of the roofline reached
        return BenchResult(bench.name, dims, nbytes, flops, sub, ref, calibrated, gbps, tflops, frac, clock, n_sets)

    def untraced_own_work(self, cases: Sequence[CaseResult]) -> CaseResult | None:
        """A failing case when every correctness case passed while the kernel tracer was on but
        saw none of the submission's own kernels run (the trace was tampered with, or the work
        was done without a kernel of its own), else None."""
        w = self.worker
        if not cases or any(not c.passed for c in cases) or w.trace is None or w.own_kernels_traced:
            return None
        own = ", ".join(self.own_kernels.names()) or "none found"
        return CaseResult(token="", description="own kernels", origin="trace", size=0, status="foreign_kernel",
                          message=f"{KIND_TEXT['foreign_kernel']}: no kernel of the submission's own sources (its "
                                  f"kernels: {own}) was seen running in {len(cases)} passing cases; the work must be "
                                  f"done by kernels of kernel.cu")

    def ptx_problem(self) -> str | None:
        """Why the submission gets no performance points under ``[features] required_ptx``: the
        PTX of the kernels that ran (with the device functions they call; all of the submission's
        compiled PTX when no kernel was traced) lacks a required instruction; else None. A kernel
        that holds the instruction but never runs does not count."""
        texts = list(self.worker.module_ptx.values())
        if not self.spec.required_ptx or not texts:
            return None
        ran = self.worker.own_launched
        if ran:
            code = "\n".join(parse_ptx(t).code_of(ran) for t in texts)
            what = f"the PTX of the kernels that ran ({', '.join(sorted(base_name(n) for n in ran))})"
        else:
            code, what = "\n".join(texts), "the compiled PTX of the submission's .cu files"
        missing = missing_ptx(self.spec, code, what)
        return f"{missing[0]}: no performance points" if missing else None

    def close(self) -> None:
        self.worker.close()


def isolation_failed_text(outcome: Outcome) -> str:
    """The reason of a grade ended by a worker that could not be isolated: the machine's problem."""
    return (f"{outcome.message}; this is the grading machine's problem, not the submission's: check that user and "
            f"mount namespaces work here (unshare --user --map-root-user --mount true) and grade again")


def versions(device: DeviceInfo | None) -> dict[str, str]:
    import platform
    import hypothesis
    from importlib.metadata import PackageNotFoundError, version
    out = {"python": platform.python_version(), "numpy": np.__version__, "hypothesis": hypothesis.__version__}
    try:
        out["grader"] = version("gpu-kernel-grader")
    except PackageNotFoundError:
        out["grader"] = "source"
    if device is not None:
        out.update(cupy=device.cupy, cuda_driver=str(device.driver), cuda_runtime=str(device.runtime))
    return out


def smallest(failures: Sequence[CaseResult]) -> CaseResult | None:
    return min(failures, key=lambda c: (c.size, c.token)) if failures else None


@dataclass(frozen=True)
class _Run:
    """What every result of one :func:`grade` call shares, and the one place a GradeResult is built."""
    spec: Spec
    submission: Path
    options: GradeOptions
    device: DeviceInfo | None
    started: str   # local time, ISO 8601
    t0: float      # time.perf_counter() at the start

    def result(self, status: GradeStatus, score: scoring.Score, *, reason: str = "", reason_kind: str = "",
               ceilings: Ceilings | None = None, kernels: Sequence[dict[str, Any]] = (),
               cases: Sequence[CaseResult] = (), smallest_failure: CaseResult | None = None,
               repro: str | None = None, benchmarks: Sequence[BenchResult] = (), flags: Sequence[str] = (),
               worker_restarts: int = 0, isolation: str = "") -> GradeResult:
        hc, hb = hidden_counts(self.spec)
        return GradeResult(
            exercise=self.spec.name, title=self.spec.title, submission=str(self.submission), status=status,
            reason=reason, reason_kind=reason_kind, profile=self.options.profile.name, seed=self.options.seed,
            secret_used=bool(self.options.secret), device=self.device, ceilings=ceilings, kernels=tuple(kernels),
            cases=tuple(cases), smallest_failure=smallest_failure, repro=repro, benchmarks=tuple(benchmarks),
            score=score, flags=tuple(flags), hidden_cases=hc, hidden_benchmarks=hb, worker_restarts=worker_restarts,
            seconds=time.perf_counter() - self.t0, started=self.started, versions=versions(self.device),
            isolation=isolation)

    def not_graded(self, kind: str, reason: str) -> GradeResult:
        """No grade: ``kind`` (a worker failure kind, or "wrong_gpu", "forbidden", "no_gpu",
        "no_isolation", a static check's kind) and the one-line ``reason``."""
        return self.result(GradeStatus.NOT_GRADED, scoring.Score.unscored(
            self.spec.points_correctness, self.spec.points_performance, reason), reason=reason, reason_kind=kind)


@dataclass(frozen=True)
class _Loaded:
    """The submission's worker started: the resources of its kernels as its reply listed them, and
    how many of the listed entries were malformed (left out)."""
    kernels: tuple[dict[str, Any], ...]
    dropped: int


def _load(g: Grader, run: _Run) -> _Loaded | GradeResult:
    """Phase 1: compile and load the submission in its worker; a GradeResult when it is not graded."""
    g.progress.phase("compiling and loading the submission", None)
    start = g.worker.ensure()
    forbidden = g.own_kernels.forbidden_code()   # known from the preload, before solution.py was imported
    if forbidden:   # the same on every case: refused before solve runs
        return run.not_graded("forbidden", forbidden)
    if not start.ok:
        text = start.message if start.kind == "compile_error" else f"{KIND_TEXT[start.kind]}: {start.message}"
        if g.backend.name == "host" and re.search(r"cuda|cupy|nvrtc", start.message, re.I):
            # the machine's, not the submission's: the host backend has no GPU for CuPy to use
            return run.not_graded("no_gpu", f"{text}; the host backend (--backend host) runs NumPy submissions "
                                  f"only, without a GPU: grade this one on a machine with a GPU, or check it here "
                                  f"with --compile-only")
        if start.kind == "isolation":   # the machine's: exit 4, as a grade that could not start
            return run.not_graded("no_isolation", isolation_failed_text(start))
        return run.not_graded(start.kind, text)
    raw = start.data.get("kernels", ())
    kernels = resources_from_reply(raw)   # the worker's reply: only well-formed entries reach a report
    listed = len(raw) if isinstance(raw, (list, tuple)) else int(bool(raw))
    return _Loaded(tuple(kernels), listed - len(kernels))


def _timing(g: Grader, others: list[tuple[str, Worker]]) -> list[BenchResult]:
    """Phase 3: time every benchmark shape the profile shows, side by side with the reference
    solution (when it is available) and the no-op baseline worker (always: it measures the
    harness's own overhead for the wall-clock bound). The started workers are appended to
    ``others``, so that the caller closes them whatever happens. Raises RuntimeError when a trusted
    worker fails to load."""
    folders = [(BASELINE, BASELINE_SUBMISSION)]
    if g.opt.reference is not None:
        folders.insert(0, (REFERENCE, g.opt.reference.resolve()))
    for name, folder in folders:
        w = g.new_worker(folder, trusted=True, label=f"the {name} worker")
        others.append((name, w))
        started = w.ensure()
        if not started.ok:
            raise RuntimeError(f"the {name} worker ({folder}) failed to load: {started.message}")
    rng = random.Random(g.seed ^ 0x5EED)
    results: list[BenchResult] = []
    for bench in g.spec.benchmarks:
        if bench.hidden and not g.opt.profile.hidden:
            continue
        results.append(g.benchmark(bench, others, rng))
        if results[-1].submission.failure_kind in REFUSED_KINDS:
            break   # not the submission's own work: timing the other shapes would say nothing
    for b in results:
        # a reference left without samples, or failed by a busy GPU, once the submission's timing
        # had failed is not a reference failure (timing._gpu_busy fails the trusted ones then)
        if b.reference is not None and b.reference.failure and not (
                b.submission.failure and b.reference.failure_kind in (None, "gpu_busy")):
            raise RuntimeError(f"the reference solution failed while timing {b.name}: {b.reference.failure}")
    return results


def _timing_failures(results: Sequence[BenchResult]) -> list[CaseResult]:
    """Wrong outputs (or a forbidden library, a memory cap) while timing fail correctness: a
    submission must be right on every call, not only on the checked ones."""
    out = []
    for b in results:
        kind = b.submission.failure_kind
        if kind in TIMING_FAILS_CORRECTNESS:
            out.append(CaseResult(token="", description=f"benchmark {b.name}", origin="benchmark", size=0,
                                  status=kind if kind in REFUSED_KINDS else CaseStatus.FAIL,
                                  message=b.submission.failure or ""))
    return out


def _score(spec: Spec, options: GradeOptions, correct: bool, perf: Sequence[scoring.ShapePerf],
           thresholds: scoring.Thresholds, performance_block: str | None) -> scoring.Score:
    """Phase 4: the points (see grader.scoring), before review flags may withhold some."""
    pc, pp = spec.points_correctness, spec.points_performance
    if options.case_token:
        return scoring.Score.unscored(pc, pp, "a single --case run is not scored")
    if correct and not options.benchmark:
        return scoring.Score.correctness_only(pc, pp, "timing skipped (--no-timing)")
    sc = scoring.score(correct, perf, thresholds, pc, pp)
    return replace(sc, performance=0.0, note=performance_block) if performance_block else sc


def _bench_flags(b: BenchResult, gpu_sharers: set[str]) -> list[str]:
    """Phase 5, per shape: what a reviewer must know about the submission's timing of ``b``."""
    s, flags = b.submission, []
    if s.outside_events:
        flags.append(f"{b.name}: {s.overhead_ms_per_call * 1e3:.0f} us per call ran outside the timed events, over "
                     f"the {s.allowed_ms_per_call * 1e3:.0f} us allowed (side stream, host thread, deferred work or "
                     f"a patched timer?); the wall-clock time was used")
    if s.drained_ms_per_call > 0:
        flags.append(f"{b.name}: work the submission left on the GPU ran {s.drained_ms_per_call * 1e3:.0f} us per "
                     f"call after its replies (counted in its wall-clock time)")
    if s.failure_kind == "gpu_busy":
        sharers = (f" (other processes on this GPU then: {', '.join(sorted(gpu_sharers))}; grade on a GPU nothing "
                   f"else uses)" if gpu_sharers else "")
        flags.append(f"{b.name}: {s.failure}{sharers}; no performance points for this shape")
    if s.uneven:
        flags.append(f"{b.name}: call times within a round differ by more than {UNEVEN_RATIO:g}x (work of several "
                     f"calls done in one?); each round is scored by its mean")
    if b.clock is not None and b.clock.throttled:
        flags.append(f"{b.name}: GPU clock {b.clock.sm_mhz}/{b.clock.max_sm_mhz} MHz while timed kernels ran"
                     + (f", throttled ({', '.join(b.clock.throttle)})" if b.clock.throttle else "")
                     + "; timings may be low")
    return flags


def _process_flags(g: Grader, others: Sequence[tuple[str, Worker]], continued: int) -> list[str]:
    """Phase 5, once every worker is closed: processes the submission left behind or let escape,
    and a grading process that was itself stopped (``continued``: times_continued() at the start)."""
    flags = []
    strays = g.worker.strays_killed + sum(w.strays_killed for _, w in others)
    if strays:  # the reference and baseline workers are trusted: any stray is the submission's
        flags.append(f"the submission left {strays} process(es) running after its worker stopped (a daemon?); "
                     f"they were killed")
    if g.worker.escaped:
        flags.append(f"the submission started {len(g.worker.escaped)} process(es) that left its worker's process "
                     f"tree (a daemon, by a double fork); they were stopped, continued and timed with the worker "
                     f"and killed with it")
    if times_continued() != continued:
        flags.append("the grading process was stopped and continued during this grade (SIGSTOP from another "
                     "process, or job control): timings are not trustworthy; grade again")
    return flags


def grade(spec: Spec, submission: Path, options: GradeOptions, backend: Backend, device: DeviceInfo | None,
          ceilings: Ceilings | None, calibration: Calibration, progress: Progress | None = None,
          repro_options: str = "") -> GradeResult:
    """Grade ``submission`` (a folder with kernel.cu and solution.py) on ``spec``, in phases:
    load (:func:`_load`), correctness (:meth:`Grader.correctness`), timing (:func:`_timing`),
    score (:func:`_score`) and review flags (:func:`_bench_flags`, :func:`_process_flags`,
    scoring.review_flags).

    Never raises for a problem of the submission: those end up in the result (status "not_graded"
    with ``reason`` and ``reason_kind``, or failing cases). Raises only for grader-side problems
    (a broken reference.py, a trusted worker that fails). ``repro_options``: what the failing
    case's "reproduce" line adds after the exercise (the CLI's ``--root``, when it was given).
    """
    submission = Path(submission)
    run = _Run(spec, submission, options, device, time.strftime("%Y-%m-%dT%H:%M:%S%z"), time.perf_counter())
    wrong_gpu = arch_refusal(spec.name, spec.arch, device)
    if wrong_gpu:   # before any case: the submission's kernels (and the reference's) cannot run on this GPU
        return run.not_graded("wrong_gpu", wrong_gpu)
    problem = static_check(spec, submission)
    if problem:
        return run.not_graded(*problem)
    g = Grader(spec, submission, options, backend, device, ceilings, calibration, progress or Progress())
    continued = times_continued()
    others: list[tuple[str, Worker]] = []
    try:
        loaded = _load(g, run)
        if isinstance(loaded, GradeResult):
            return loaded
        cases = g.correctness()   # phase 2
        if g.isolation_failure is not None:   # a restart after a fault could not be isolated: no verdict
            return run.not_graded("no_isolation", isolation_failed_text(g.isolation_failure))
        untraced = g.untraced_own_work(cases)
        cases += [untraced] if untraced else []
        small = smallest([c for c in cases if not c.passed])
        correct = small is None and not options.case_token
        benchmarks = _timing(g, others) if correct and options.benchmark else []
        cases += _timing_failures(benchmarks)
        small = small or smallest([c for c in cases if not c.passed])
        correct = correct and small is None
    finally:
        g.close()   # before the process flags: processes it left behind are found and counted
        for _, w in others:
            w.close()
    performance_block = g.ptx_problem() if correct else None
    thresholds = spec.thresholds(device.arch if device else None)
    perf = [scoring.ShapePerf(b.name, b.time_ms, b.reference.time_ms if b.reference else None,
                              b.calibrated_ms, b.ceiling_fraction, b.submission.failure) for b in benchmarks]
    flags = scoring.review_flags(perf, thresholds)
    sc = scoring.withhold(_score(spec, options, correct, perf, thresholds, performance_block), flags,
                          options.accept_implausible)
    if g.budget_spent:
        flags.append(f"correctness stopped after {len(cases)} cases: {CASE_BUDGET_SHARE:.0%} of the exercise's "
                     f"time limit ([limits] total_s = {spec.limits.total_s:g} s) was spent")
    if performance_block:
        flags.append(performance_block)
    if loaded.dropped > 0:
        flags.append(f"the worker's load reply listed {loaded.dropped} malformed kernel resource entr"
                     f"{'y' if loaded.dropped == 1 else 'ies'} (the grader's worker writes none: was its reply "
                     f"changed by the submission?); left out of this report")
    for b in benchmarks:
        flags += _bench_flags(b, g.gpu_sharers)
    flags += _process_flags(g, others, continued)
    repro = (f"grade {spec.name}{repro_options} --submission {submission} --case '{small.token}'"
             if small is not None and small.token else None)
    return run.result(GradeStatus.GRADED, sc, ceilings=ceilings, kernels=loaded.kernels, cases=cases,
                      smallest_failure=small, repro=repro, benchmarks=benchmarks, flags=flags,
                      worker_restarts=max(0, g.worker.starts - 1),
                      isolation=f"{g.worker.isolation}; {g.worker.kernel_check}")
