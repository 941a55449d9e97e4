"""The benchmark protocol and its statistics.

Anchors: nvbench (adaptive stop on the noise of the estimate), triton.testing.do_bench (L2 flush
between iterations, median), GPU MODE's evaluation (outputs checked after timed runs).

For one benchmark shape (:func:`run_benchmark`):

1. Each contestant (the submission; the reference solution when it is available, else a no-op
   "baseline" worker that measures the harness's own overhead) warms up by time in its own worker.
2. Rounds follow until the estimate is stable. Before every round the parent re-draws EVERY input
   set (so no call ever sees inputs an earlier call saw: caching and replay give wrong outputs) and
   poisons every output; each contestant then times one ``solve`` per input set in a shuffled
   order, each after an L2 flush, with CUDA events on the stream it runs on; then the parent checks
   every output the round produced, the guards and the inputs (DESIGN must 4). Contestants
   alternate within each round, so drifts in clock or temperature hit both alike. A contestant's
   process group is stopped (SIGSTOP) whenever it is not being timed, so it cannot work on the
   next inputs while the parent writes them or while another contestant runs.
3. One sample per round: the MEAN of that round's call times, so doing several calls' work in one
   call and nothing in the others gains nothing (per-call medians would). When most rounds
   (UNEVEN_SHARE) have call times that differ by more than UNEVEN_RATIO, the result is flagged.
4. Stop when the relative standard error of the median is below the target (after a minimum
   number of samples), or at the sample cap, or at the wall-clock cap.
5. The parent's own wall clock around each round bounds what the worker reports (DESIGN must 5):
   time outside the events (side streams, host threads, deferred work, a patched timer) is the
   round's wall time minus its event times. When its median exceeds the baseline contestant's
   (the reference, or the no-op worker) by more than OUTSIDE_FACTOR and the policy's slack per call
   (OUTSIDE_SLACK_MS by default; no allowance scales with the baseline's noise, which a submission
   could inflate by loading the machine),
   the worker's times are not believed: each round's sample becomes its wall time minus the
   baseline's overhead, per call.
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
    and quartiles need a few samples however long they take)."""
    min_samples: int = 10
    max_samples: int = 300
    target_rse: float = 0.005
    max_seconds: float = 3.0
    warmup_ms: float = 25.0
    min_rounds: int = 3
    outside_slack_ms: float = 0.05   # = OUTSIDE_SLACK_MS; the host backend (CPU tests) needs more

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

    @property
    def samples(self) -> list[float]:
        """One sample per round: the mean call time (ms)."""
        return [sum(t) / len(t) for t, _ in self.rounds if t]

    def overheads(self) -> list[float]:
        """Per round: wall time not covered by the reported event times (ms)."""
        return [max(0.0, wall - sum(t)) for t, wall in self.rounds]


@dataclass(frozen=True)
class ShapeResult:
    """Final timing of one contestant on one shape. ``time_ms`` is what scoring uses: the median
    over rounds of the mean call time, or of the wall-clock time per call when work escaped the
    events (``outside_events``). ``overhead_ms_per_call`` is the median unaccounted time per call;
    ``uneven`` marks rounds whose call times differ wildly (work batched into one call?)."""
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


# How much more unaccounted wall time than the baseline's a submission may have before its event
# times are distrusted: a factor on the baseline's per-round overhead and an absolute slack per
# call (ms) for scheduling noise and host work that overlaps the L2 flush.
OUTSIDE_FACTOR = 1.5
OUTSIDE_SLACK_MS = 0.05
# Without any baseline contestant: unaccounted wall time per call allowed, in ms.
OUTSIDE_ABSOLUTE_MS = 0.5
# A round whose slowest call took this many times its fastest (and at least UNEVEN_MIN_MS) is uneven.
UNEVEN_RATIO = 4.0
UNEVEN_MIN_MS = 0.05
UNEVEN_SHARE = 0.75   # flagged when more than this share of the rounds is uneven (not a stray spike)
BASELINES = ("reference", "baseline")


@dataclass(frozen=True)
class Contestant:
    """A worker to time: ``request(message, timeout)`` returns an Outcome (see sandbox.supervisor);
    ``pause``/``resume`` stop and continue its processes between its timed rounds."""
    name: str
    request: Callable[[dict[str, Any], float], Any]
    pause: Callable[[], None] = lambda: None
    resume: Callable[[], None] = lambda: None


def run_benchmark(contestants: Sequence[Contestant], sets: Sequence[list[dict[str, Any]]],
                  refresh: Callable[[int], None], poison: Callable[[], None],
                  verify: Callable[[str], str | None], policy: StopPolicy, flush_bytes: int,
                  call_timeout_s: float, rng: random.Random,
                  progress: Callable[[int], None] | None = None, check_warmup: bool = True) -> list[ShapeResult]:
    """Time every contestant on the prepared input sets (see the module docstring).

    Args:
        sets: for each input set, the JSON descriptors of solve's arguments, in call order.
        refresh: re-draw input set k (and its expected outputs); it may replace ``sets[k]``.
        poison: fill every output with the poison pattern and reset the guards.
        verify: check every output, guard and input against the expected; None or a failure message.
        flush_bytes: size of the L2 flush buffer (0 for none).
        call_timeout_s: time limit per call; a round's limit scales with the number of sets.
        check_warmup: verify the outputs after warm-up (impossible with in-place outputs, which
            repeated warm-up calls keep updating).
    """
    results = {c.name: ContestantTiming(c.name) for c in contestants}
    for c in contestants:
        poison()
        out = c.request({"op": "warmup", "sets": list(sets), "ms": policy.warmup_ms},
                        call_timeout_s + policy.warmup_ms / 1e3 * 4)
        c.pause()
        problem = out.message if not out.ok else (verify(f"warm-up of {c.name}") if check_warmup else None)
        if problem:
            results[c.name].failure = f"during warm-up: {problem}"
            results[c.name].failure_kind = out.kind if not out.ok else "wrong"
    active = [c for c in contestants if results[c.name].failure is None]
    t_start = time.perf_counter()
    round_no = 0
    try:
        while active:
            for k in range(len(sets)):
                refresh(k)
            round_no += 1
            for c in (active if round_no % 2 else active[::-1]):
                res = results[c.name]
                poison()
                order = list(range(len(sets)))
                rng.shuffle(order)
                t_resumed = time.perf_counter()  # the round's wall clock starts before the worker may run
                c.resume()
                resume_ms = (time.perf_counter() - t_resumed) * 1e3
                out = c.request({"op": "time", "sets": list(sets), "order": order, "flush_bytes": flush_bytes},
                                call_timeout_s * len(sets) + 5)
                c.pause()
                if not out.ok:
                    res.failure, res.failure_kind = f"{out.kind}: {out.message}", out.kind
                    continue
                raw = out.data.get("times_ms")
                if (not isinstance(raw, list) or len(raw) != len(order)
                        or not all(isinstance(t, (int, float)) and not isinstance(t, bool)
                                   and math.isfinite(t) and t >= 0 for t in raw)):
                    res.failure, res.failure_kind = "the worker reported malformed times", "malformed_times"
                    continue
                problem = verify(f"timed round {round_no} of {c.name}")
                if problem:
                    res.failure, res.failure_kind = problem, "wrong"
                    continue
                res.rounds.append(([float(t) for t in raw], resume_ms + out.wall_s * 1e3))
            active = [c for c in active if results[c.name].failure is None]
            if progress:
                progress(round_no)
            elapsed = time.perf_counter() - t_start
            if all(policy.done(results[c.name].samples, elapsed) for c in active):
                break
    finally:
        for c in contestants:
            c.resume()
    return finalize(list(results.values()), policy.outside_slack_ms)


def _uneven(times: Sequence[float]) -> bool:
    return len(times) > 1 and max(times) >= UNEVEN_MIN_MS and max(times) > UNEVEN_RATIO * min(times)


def finalize(timings: list[ContestantTiming], slack_ms: float = OUTSIDE_SLACK_MS) -> list[ShapeResult]:
    """Summaries, with the wall-clock bound applied: the first contestant is the submission; one
    named "reference" or "baseline" sets the overhead it is compared with; ``slack_ms`` is the
    unaccounted time per call allowed beyond it."""
    base = next((t for t in timings if t.name in BASELINES and t.rounds and not t.failure), None)
    base_overhead = statistics.median(base.overheads()) if base is not None else None
    out = []
    for t in timings:
        if not t.rounds or t.failure:
            out.append(ShapeResult(t.name, summarize(t.samples) if t.samples else None, None, None, None,
                                   False, t.failure or "no samples", tuple(t.samples), False, t.failure_kind))
            continue
        calls = len(t.rounds[0][0])
        overhead = statistics.median(t.overheads())
        if base_overhead is not None:
            allowed = max(OUTSIDE_FACTOR * base_overhead, base_overhead + slack_ms * calls)
        else:
            allowed = OUTSIDE_ABSOLUTE_MS * calls
        # reported times of zero are not believed either (a GPU call takes microseconds at least)
        outside = t.name not in BASELINES and (overhead > allowed or statistics.median(t.samples) <= 0)
        samples = t.samples
        if outside:  # the parent's wall clock, less the harness overhead the baseline shows
            samples = [max(0.0, wall - (base_overhead or 0.0)) / len(ts) for ts, wall in t.rounds]
        stats = summarize(samples)
        wall_per_call = statistics.median(wall / len(ts) for ts, wall in t.rounds)
        uneven = sum(_uneven(ts) for ts, _ in t.rounds) > UNEVEN_SHARE * len(t.rounds)
        out.append(ShapeResult(t.name, stats, stats.median_ms, wall_per_call, overhead / calls, outside, None,
                               tuple(samples), uneven))
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
