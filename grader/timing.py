"""The benchmark protocol and its statistics.

Anchors: nvbench (adaptive stop on the noise of the estimate), triton.testing.do_bench (L2 flush,
median), GPU MODE's evaluation (outputs checked after timed runs).

For one benchmark shape (:func:`run_benchmark`), with contestants the submission, the reference
solution when it is available, and always the no-op "baseline" worker (it runs the same requests
with a ``solve`` that does nothing, so its unaccounted time is the harness's own overhead):

1. Each contestant warms up by time in its own worker.
2. Rounds follow until the estimate is stable. Before every round the parent re-draws EVERY input
   set (a cache or a replayed output is wrong). For each contestant's turn it then allocates a
   fresh :class:`~grader.sandbox.buffers.Arena` for every set; the contestant, resumed for one
   untimed request, maps it (and unmaps its previous one) and is stopped again. Only then does the
   parent write the inputs and poison the outputs: a stopped worker cannot act on them, and GPU
   work it queued earlier (say a kernel waiting for the inputs to change) is seen by the drain
   check (:class:`grader.sandbox.watch.GpuDrain`): the parent waits until no other CUDA context has
   work on the GPU, and that wait is charged to the contestant's round (no work queued
   earlier gains anything; mapping, whose cost grows with the data, stays out of the timed
   window). The parent looks for the contestant's processes, starts its wall clock and resumes
   them (the clock runs from the first SIGCONT: however many threads or processes a worker has,
   nothing it runs after being continued is outside the window). In one
   request (which names only the order of the sets: the worker built solve's arguments when it
   mapped them, so neither the descriptors' transport nor the arrays' construction is timed) the worker flushes L2 once and calls ``solve`` on every set back to back, in a shuffled
   order, with CUDA events between consecutive calls; then it synchronises the device and replies. The
   parent stops the clock at the reply and, before any other check, stops the contestant's
   process group (SIGSTOP, without first walking /proc for its processes, a walk whose length the
   worker controls: nothing it does after its reply goes unseen) and waits until the GPU has
   drained: time any of the contestant's GPU work still needed after its reply is added to its
   round's wall time (GpuDrain does not count a wait under NOISE_MS). Only then are the other
   processes of its session looked for and stopped (nothing runs on its side between its rounds). Then the
   parent checks every output, guard and input of the round (every output a timed call produced must be correct). Contestants alternate
   within a round, so drifts in clock or temperature hit them alike.
3. One sample per round: the MEAN of that round's call times, so doing several calls' work in one
   call and nothing in the others gains nothing (per-call medians would). When most rounds
   (UNEVEN_SHARE) have call times that differ by more than UNEVEN_RATIO, the result is flagged.
4. Stop when the relative standard error of the median is below the target (after a minimum
   number of samples), or at the sample cap, or at the wall-clock cap.
5. The parent's wall clock bounds what the worker reports (time outside the events is counted or flagged): a round's unaccounted
   time is its wall time (plus any drain) less the sum of its call times, divided by the calls
   (work on side streams, in host threads, deferred past the reply, or a patched timer all land
   there). A contestant may have as much of it per call as the baseline has, plus OUTSIDE_SHARE of
   the basis time per call (the reference's median, else the calibrated time, else the roofline
   time) plus the policy's slack; the same rule whatever the basis. Beyond it its event times are
   not believed: each round's sample becomes its wall time less the baseline's overhead, per call.
"""
from __future__ import annotations

import math
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

# Asymptotic standard error of the sample median for a normal distribution: 1.2533 * sigma / sqrt(n)
# (sqrt(pi/2); e.g. Kendall & Stuart, The Advanced Theory of Statistics, vol. 1), with sigma
# estimated robustly as IQR / 1.349.
_MEDIAN_SE = math.sqrt(math.pi / 2)
_IQR_TO_SIGMA = 1.349


@dataclass(frozen=True)
class TimingStats:
    """Summary of per-call times in milliseconds: median, quartiles, IQR, sample count and the
    relative standard error of the median (dimensionless)."""
    median_ms: float
    q1_ms: float
    q3_ms: float
    n: int
    rse: float
    min_ms: float

    @property
    def iqr_ms(self) -> float:
        return self.q3_ms - self.q1_ms


def summarize(samples: Sequence[float]) -> TimingStats:
    """Median, quartiles (inclusive method) and the median's relative standard error.

    Raises:
        ValueError: for an empty sample.
    """
    if not samples:
        raise ValueError("no timing samples")
    xs = sorted(float(s) for s in samples)
    med = statistics.median(xs)
    if len(xs) >= 2:
        q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    else:
        q1 = q3 = med
    sigma = (q3 - q1) / _IQR_TO_SIGMA
    rse = _MEDIAN_SE * sigma / math.sqrt(len(xs)) / med if med > 0 else math.inf
    return TimingStats(median_ms=med, q1_ms=q1, q3_ms=q3, n=len(xs), rse=rse, min_ms=xs[0])


@dataclass(frozen=True)
class StopPolicy:
    """When to stop sampling one shape: at least ``min_samples``, then as soon as the median's
    relative standard error is <= ``target_rse``; never more than ``max_samples`` samples, nor more
    than ``max_seconds`` of wall time once ``min_rounds`` samples exist (slow kernels: a median
    and quartiles need a few samples however long they take). ``outside_slack_ms`` and
    ``uneven_min_ms`` are the floors (ms) of the wall-clock bound and of the uneven-round check: the
    GPU's by default; the host backend of the CPU tests needs higher ones (there the first call of
    a round takes about 4x the others, median 57 vs 13 us, benchmarks/RESULTS.md, twelfth session)."""
    min_samples: int = 10
    max_samples: int = 300
    target_rse: float = 0.005
    max_seconds: float = 3.0
    warmup_ms: float = 25.0
    min_rounds: int = 3
    outside_slack_ms: float = 0.02   # = OUTSIDE_SLACK_MS; the host backend (CPU tests) needs more
    uneven_min_ms: float = 0.05      # = UNEVEN_MIN_MS; the host backend needs more too

    def done(self, samples: Sequence[float], elapsed_s: float) -> bool:
        if len(samples) >= self.max_samples:
            return True
        if elapsed_s >= self.max_seconds and len(samples) >= min(self.min_rounds, self.min_samples):
            return True
        return len(samples) >= self.min_samples and summarize(samples).rse <= self.target_rse


@dataclass
class ContestantTiming:
    """What one contestant produced on one shape (mutable while the rounds run): per timed round,
    the worker's event times (ms) and the parent's wall time for the round (ms)."""
    name: str
    rounds: list[tuple[list[float], float]] = field(default_factory=list)
    failure: str | None = None
    failure_kind: str | None = None   # "wrong" (outputs, guards or inputs) or a worker failure kind
    drained_ms: list[float] = field(default_factory=list)   # per round: GPU work left after the reply

    @property
    def samples(self) -> list[float]:
        """One sample per round: the mean call time (ms)."""
        return [sum(t) / len(t) for t, _ in self.rounds if t]

    def overheads_per_call(self) -> list[float]:
        """Per round: wall time not covered by the reported call times, per call (ms)."""
        return [max(0.0, wall - sum(t)) / len(t) for t, wall in self.rounds if t]


@dataclass(frozen=True)
class ShapeResult:
    """Final timing of one contestant on one shape. ``time_ms`` is what scoring uses: the median
    over rounds of the mean call time, or of the wall-clock time per call when work escaped the
    events (``outside_events``). ``overhead_ms_per_call`` is the median unaccounted time per call
    and ``allowed_ms_per_call`` the bound it was held to; ``drained_ms_per_call`` the median GPU
    time the contestant's work still needed after its replies; ``uneven`` marks rounds whose call
    times differ wildly (work batched into one call?)."""
    name: str
    stats: TimingStats | None
    time_ms: float | None
    wall_ms_per_call: float | None
    overhead_ms_per_call: float | None
    outside_events: bool
    failure: str | None
    samples: tuple[float, ...]
    uneven: bool = False
    failure_kind: str | None = None
    allowed_ms_per_call: float | None = None
    drained_ms_per_call: float = 0.0


# Unaccounted time per call a contestant may have beyond the baseline's: this share of the basis
# time per call (the reference's, the calibrated or the roofline time) plus the policy's slack.
OUTSIDE_SHARE = 0.10
OUTSIDE_SLACK_MS = 0.02
# Without a baseline contestant (tests of the protocol alone): unaccounted wall time per call allowed, in ms.
OUTSIDE_ABSOLUTE_MS = 0.5
# A round whose slowest call took this many times its fastest (and at least UNEVEN_MIN_MS) is uneven.
UNEVEN_RATIO = 4.0
UNEVEN_MIN_MS = 0.05
UNEVEN_SHARE = 0.75   # flagged when more than this share of the rounds is uneven (not a stray spike)
BASELINE = "baseline"
REFERENCE = "reference"
SUBMISSION = "submission"
DRAIN_LIMIT_S = 2.0   # how long the GPU may stay busy after a reply before the round fails
GPU_BUSY = (f"work left on the GPU kept it busy for more than {DRAIN_LIMIT_S:g} s (a kernel left running after "
            f"a reply, or a process the submission started?)")


@dataclass(frozen=True)
class Contestant:
    """A worker to time: ``request(message, timeout, on_reply=None)`` returns an Outcome (see
    sandbox.supervisor; ``on_reply`` runs as soon as the reply is read); ``pause``/``resume`` stop
    and continue its processes between its timed rounds; ``stop`` stops them at once, without
    looking for new ones (the moment a timed reply is read)."""
    name: str
    request: Callable[..., Any]
    pause: Callable[[], None] = lambda: None
    resume: Callable[[], float | None] = lambda: None   # the time its first process was continued, if known
    stop: Callable[[], None] = lambda: None


@dataclass(frozen=True)
class Binding:
    """One contestant's buffers for one round: solve's arguments per input set (JSON descriptors),
    the IPC handles / shared-memory names the worker must unmap afterwards, and ``free`` to drop
    the parent's reference to the memory."""
    descriptors: list[list[dict[str, Any]]]
    handles: tuple[str, ...]
    free: Callable[[], None]


@dataclass(frozen=True)
class Rig:
    """The parent's side of one benchmark shape: ``sets`` input sets (= calls per round);
    ``redraw`` draws new values and expected outputs for every set; ``bind`` places every set in a
    fresh arena (nothing written yet); ``fill`` writes the inputs of the bound sets and poisons
    their outputs; ``verify`` checks every output, guard and input of the bound sets (None, or a
    message); ``drain(limit_s)`` waits until no other CUDA context has work on the GPU and returns
    the ms it waited (math.inf past ``limit_s``); ``release`` detaches the sets from the bound
    buffers once a turn is checked (the :class:`Binding` itself is freed after the worker unmapped
    it, in its next request)."""
    sets: int
    redraw: Callable[[], None]
    bind: Callable[[], Binding]
    verify: Callable[[str], str | None]
    drain: Callable[[float], float] = lambda limit_s: 0.0
    release: Callable[[], None] = lambda: None
    fill: Callable[[], None] = lambda: None


def _valid_times(raw: Any, calls: int) -> bool:
    return (isinstance(raw, list) and len(raw) == calls
            and all(isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and t >= 0
                    for t in raw))


def run_benchmark(contestants: Sequence[Contestant], rig: Rig, policy: StopPolicy, flush_bytes: int,
                  call_timeout_s: float, rng: random.Random, basis_ms: float | None = None,
                  progress: Callable[[int], None] | None = None, check_warmup: bool = True,
                  on_window: Callable[[float, float], None] | None = None) -> list[ShapeResult]:
    """Time every contestant on ``rig`` (see the module docstring); results in contestant order.

    Args:
        flush_bytes: size of the L2 flush before each round's calls (0 for none).
        call_timeout_s: time limit per call; a round's limit scales with the number of sets.
        basis_ms: the time per call the outside-the-events allowance is relative to when no
            reference solution is timed (the calibrated or the roofline time), or None.
        check_warmup: verify the outputs after warm-up (impossible with in-place outputs, which
            repeated warm-up calls keep updating).
        on_window: called with (start, end) perf_counter seconds of every timed request (the
            caller samples the GPU clock inside them).
    """
    results = {c.name: ContestantTiming(c.name) for c in contestants}
    # each contestant's last buffers: the worker unmaps them in its next request, and only then does
    # the parent free them (the last unmapping of an allocation pays for its release: never in a
    # timed request)
    held: dict[str, Binding | None] = {c.name: None for c in contestants}
    rig.redraw()
    for c in contestants:
        binding = rig.bind()
        rig.fill()
        out = c.request({"op": "warmup", "sets": binding.descriptors, "ms": policy.warmup_ms},
                        call_timeout_s + policy.warmup_ms / 1e3 * 4)
        c.pause()
        busy = math.isinf(rig.drain(DRAIN_LIMIT_S))
        check = check_warmup and c.name != BASELINE   # the baseline writes nothing
        problem = out.message if not out.ok else (rig.verify(f"warm-up of {c.name}") if check else None)
        rig.release()
        held[c.name] = binding
        if problem:
            results[c.name].failure = f"during warm-up: {problem}"
            results[c.name].failure_kind = out.kind if not out.ok else "wrong"
        if busy:
            _gpu_busy(results, "warm-up", c)
    active = [c for c in contestants if results[c.name].failure is None]
    t_start = time.perf_counter()
    round_no = 0
    try:
        while active:
            rig.redraw()
            round_no += 1
            for c in (active if round_no % 2 else active[::-1]):
                if results[c.name].failure is None:
                    _timed_round(c, results, rig, rng, round_no, flush_bytes, call_timeout_s, held, on_window)
            active = [c for c in active if results[c.name].failure is None]
            if progress:
                progress(round_no)
            elapsed = time.perf_counter() - t_start
            if all(policy.done(results[c.name].samples, elapsed) for c in active):
                break
    finally:
        for c in contestants:
            c.resume()
            last = held[c.name]
            if last is not None:
                if results[c.name].failure is None:   # a refusal (the tracer's checks, sandbox.kernel_trace)
                    out = c.request({"op": "release", "handles": list(last.handles)}, call_timeout_s + 5)
                    if not out.ok:                     # may come with this reply too
                        results[c.name].failure = f"after the timed rounds: {out.kind}: {out.message}"
                        results[c.name].failure_kind = out.kind
                last.free()
    return finalize(list(results.values()), basis_ms, policy.outside_slack_ms, policy.uneven_min_ms)


def _gpu_busy(results: dict[str, ContestantTiming], where: str, c: Contestant) -> None:
    """Work left on the GPU past DRAIN_LIMIT_S: the reference and the baseline are trusted, so it
    is the submission's (or another process's): the submission's timing fails. Without a
    submission still timed (``grade calibrate``, or its failure came first), contestant ``c``'s
    fails, so that every busy GPU ends a contestant and the rounds end."""
    sub = results.get(SUBMISSION)
    target = sub if sub is not None and sub.failure is None else results[c.name]
    if target.failure is None:
        target.failure, target.failure_kind = f"{where}: {GPU_BUSY}", "gpu_busy"


def _timed_round(c: Contestant, results: dict[str, ContestantTiming], rig: Rig, rng: random.Random, round_no: int,
                 flush_bytes: int, call_timeout_s: float, held: dict[str, Binding | None],
                 on_window: Callable[[float, float], None] | None) -> None:
    """One contestant's turn in one round (step 2 of the module docstring); appends to its results."""
    res = results[c.name]
    binding = rig.bind()
    try:
        # the worker maps this turn's fresh arena (and unmaps the previous one) before the timed
        # request, with nothing written in it yet; stopped again, it cannot act on what the parent
        # then writes: GPU work it queued earlier is waited for, and charged to its round
        previous = held[c.name]
        c.resume()
        mapped = c.request({"op": "map", "sets": binding.descriptors,
                            "close": list(previous.handles) if previous is not None else []}, call_timeout_s + 5)
        c.pause()
        if previous is not None:   # unmapped by the worker now (or the worker is gone)
            previous.free()
        held[c.name] = binding
        if not mapped.ok:
            res.failure, res.failure_kind = f"{mapped.kind}: {mapped.message}", mapped.kind
            return
        rig.fill()
        queued_ms = rig.drain(DRAIN_LIMIT_S)
        if math.isinf(queued_ms):   # the GPU is ours and the contestant's alone from here
            _gpu_busy(results, f"before timed round {round_no} of {c.name}", c)
            return
        order = list(range(rig.sets))
        rng.shuffle(order)
        left: list[float] = []

        def stop_and_drain() -> None:   # the parent's clock has stopped: the worker stops now, and
            c.stop()                    # what it queued on the GPU is waited for before anything else
            left.append(rig.drain(DRAIN_LIMIT_S))

        continued = c.resume()
        sent = time.perf_counter()
        t0 = sent if continued is None else continued   # the clock starts when the worker may run again
        out = c.request({"op": "time", "order": order, "flush_bytes": flush_bytes},   # on the sets mapped above
                        call_timeout_s * rig.sets + 5, on_reply=stop_and_drain)
        t1 = sent + out.wall_s   # to receiving the reply (the parent's checks after it excluded)
        c.pause()
        drained_ms = (left[0] if left else rig.drain(DRAIN_LIMIT_S)) + queued_ms
        if on_window:
            on_window(t0, t1)
        if not out.ok:
            res.failure, res.failure_kind = f"{out.kind}: {out.message}", out.kind
            return
        if math.isinf(drained_ms):
            _gpu_busy(results, f"after timed round {round_no} of {c.name}", c)
            return
        raw = out.data.get("times_ms")
        if not _valid_times(raw, len(order)):
            res.failure, res.failure_kind = "the worker reported malformed times", "malformed_times"
            return
        problem = rig.verify(f"timed round {round_no} of {c.name}") if c.name != BASELINE else None
        if problem:
            res.failure, res.failure_kind = problem, "wrong"
            return
        res.rounds.append(([float(t) for t in raw], (t1 - t0) * 1e3 + drained_ms))
        res.drained_ms.append(drained_ms)
    finally:
        rig.release()


def _uneven(times: Sequence[float], min_ms: float = UNEVEN_MIN_MS) -> bool:
    return len(times) > 1 and max(times) >= min_ms and max(times) > UNEVEN_RATIO * min(times)


def allowed_outside_ms(base_overhead_ms: float | None, basis_ms: float | None, slack_ms: float) -> float:
    """Unaccounted time per call (ms) a contestant may have: the baseline's overhead per call plus
    OUTSIDE_SHARE of the basis time per call plus ``slack_ms``; OUTSIDE_ABSOLUTE_MS without a
    baseline."""
    if base_overhead_ms is None:
        return OUTSIDE_ABSOLUTE_MS
    return base_overhead_ms + OUTSIDE_SHARE * (basis_ms or 0.0) + slack_ms


def finalize(timings: list[ContestantTiming], basis_ms: float | None = None,
             slack_ms: float = OUTSIDE_SLACK_MS, uneven_min_ms: float = UNEVEN_MIN_MS) -> list[ShapeResult]:
    """Summaries with the wall-clock bound applied (step 5). The contestant named "baseline" sets
    the harness overhead (else, in tests, one named "reference"); the basis time per call is
    ``basis_ms``, else the reference's median."""
    def ok(t: ContestantTiming) -> bool:
        return bool(t.rounds) and not t.failure
    base = next((t for t in timings if t.name == BASELINE and ok(t)), None) or \
        next((t for t in timings if t.name == REFERENCE and ok(t)), None)
    base_overhead = statistics.median(base.overheads_per_call()) if base is not None else None
    ref = next((t for t in timings if t.name == REFERENCE and ok(t)), None)
    if basis_ms is None and ref is not None:
        basis_ms = statistics.median(ref.samples)
    allowed = allowed_outside_ms(base_overhead, basis_ms, slack_ms)
    out = []
    for t in timings:
        if not ok(t):
            out.append(ShapeResult(t.name, summarize(t.samples) if t.samples else None, None, None, None,
                                   False, t.failure or "no samples", tuple(t.samples), False, t.failure_kind))
            continue
        overhead = statistics.median(t.overheads_per_call())
        # reported times of zero are not believed either (a GPU call takes microseconds at least)
        outside = t is not base and t.name != BASELINE and (overhead > allowed or statistics.median(t.samples) <= 0)
        samples = t.samples
        if outside and t.name != REFERENCE:  # the parent's wall clock, less the harness overhead the baseline
            # shows (the trusted reference keeps its event times: its flag only says the machine was noisy)
            samples = [max(0.0, wall / len(ts) - (base_overhead or 0.0)) for ts, wall in t.rounds]
        stats = summarize(samples)
        wall_per_call = statistics.median(wall / len(ts) for ts, wall in t.rounds)
        uneven = sum(_uneven(ts, uneven_min_ms) for ts, _ in t.rounds) > UNEVEN_SHARE * len(t.rounds)
        drained = statistics.median(t.drained_ms) / len(t.rounds[0][0]) if t.drained_ms else 0.0
        out.append(ShapeResult(t.name, stats, stats.median_ms, wall_per_call, overhead, outside, None,
                               tuple(samples), uneven, None, allowed, drained))
    return out


def time_gpu(fn: Callable[[], Any], *, warmup_ms: float = 25.0, policy: StopPolicy | None = None,
             flush_bytes: int = 256 << 20) -> TimingStats:
    """In-process timing for trusted code (benchmark scripts): warm-up by time, then one CUDA-event
    pair per call on the current stream, each call after an L2 flush, until ``policy`` stops.
    Returns milliseconds."""
    import cupy
    policy = policy or StopPolicy(min_samples=20, max_samples=200, target_rse=0.003, max_seconds=5.0)
    flush = cupy.empty(flush_bytes, cupy.uint8) if flush_bytes else None
    end = time.perf_counter() + warmup_ms / 1e3
    fn()
    cupy.cuda.runtime.deviceSynchronize()
    while time.perf_counter() < end:  # synchronised: never queue more work than the warm-up time
        fn()
        cupy.cuda.runtime.deviceSynchronize()
    samples: list[float] = []
    t0 = time.perf_counter()
    stream = cupy.cuda.get_current_stream()
    while not policy.done(samples, time.perf_counter() - t0):
        batch = []
        need = policy.min_samples - len(samples)
        for i in range(min(10, need) if need > 0 else 10):
            if flush is not None:
                flush.fill(i)
            a, b = cupy.cuda.Event(), cupy.cuda.Event()
            a.record(stream)
            fn()
            b.record(stream)
            batch.append((a, b))
        cupy.cuda.runtime.deviceSynchronize()
        samples.extend(cupy.cuda.get_elapsed_time(a, b) for a, b in batch)
    return summarize(samples)
