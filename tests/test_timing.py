"""grader/timing.py on synthetic samples and fake workers (no GPU)."""
from __future__ import annotations

import math
import random
import time
from typing import Any, Callable

import pytest

from grader.sandbox.supervisor import Outcome
from grader.timing import (Binding, Contestant, ContestantTiming, Rig, StopPolicy, finalize, run_benchmark,
                           summarize)


# -- summarize -----------------------------------------------------------------------------------------
def test_summarize_odd_count() -> None:
    s = summarize([5.0, 1.0, 4.0, 2.0, 3.0])
    assert (s.median_ms, s.q1_ms, s.q3_ms, s.iqr_ms, s.n, s.min_ms) == (3.0, 2.0, 4.0, 2.0, 5, 1.0)
    assert s.rse == pytest.approx(1.2533 * (2.0 / 1.349) / math.sqrt(5) / 3.0, rel=1e-4)


def test_summarize_even_count_interpolates() -> None:
    s = summarize([4, 1, 3, 2])  # inclusive quartiles: positions 0.75 and 2.25 of 0..3
    assert (s.median_ms, s.q1_ms, s.q3_ms) == (2.5, 1.75, 3.25)
    assert s.rse == pytest.approx(1.2533 * (1.5 / 1.349) / math.sqrt(4) / 2.5, rel=1e-4)


def test_summarize_single_sample_and_constant() -> None:
    s = summarize([2.0])
    assert (s.median_ms, s.q1_ms, s.q3_ms, s.n, s.rse) == (2.0, 2.0, 2.0, 1, 0.0)
    assert summarize([0.7] * 9).rse == 0.0
    assert summarize([0.0, 0.0, 0.0]).rse == math.inf  # median 0: no relative error


def test_summarize_empty_raises() -> None:
    with pytest.raises(ValueError, match="no timing samples"):
        summarize([])


# -- StopPolicy -------------------------------------------------------------------------------------------
POLICY = StopPolicy(min_samples=5, max_samples=20, target_rse=0.01, max_seconds=2.0)
NOISY = [1.0, 2.0] * 5  # rse = 1.2533 * (1 / 1.349) / sqrt(10) / 1.5 = 0.196


@pytest.mark.parametrize("samples, elapsed, done", [
    ([1.0] * 4, 0.0, False),          # rse 0 but fewer than min_samples
    ([1.0] * 5, 0.0, True),           # min_samples reached, rse 0 <= target
    ([1.0, 1.001] * 3, 0.0, True),    # rse 0.00065
    (NOISY, 0.0, False),              # rse 0.196 > target
    (NOISY, 1.99, False),
    (NOISY, 2.0, True),               # max_seconds
    ([1.0, 2.0] * 10, 0.0, True),     # max_samples
    ([], 2.5, False),                 # out of time, but fewer than min_rounds samples
    ([1.0, 2.0, 4.0], 2.5, True),     # out of time with min_rounds samples
    ([], 0.0, False),
])
def test_stop_policy(samples: list[float], elapsed: float, done: bool) -> None:
    assert POLICY.done(samples, elapsed) is done


# -- finalize: per-round means and the wall-clock bound ---------------------------------------------------
def timing(name: str, per_call_ms: float, overhead_ms: float, rounds: int = 10, calls: int = 3,
           failure: str | None = None) -> ContestantTiming:
    """``rounds`` rounds of ``calls`` equal calls, each round with ``overhead_ms`` outside the events."""
    return ContestantTiming(name, [([per_call_ms] * calls, per_call_ms * calls + overhead_ms)] * rounds,
                            failure=failure)


def test_normal_submission_uses_the_median_of_round_means() -> None:
    sub, ref, base = finalize([timing("submission", 0.5, 0.2), timing("reference", 1.0, 0.15),
                               timing("baseline", 0.0, 0.15)])
    # allowed per call: 0.05 (baseline) + 0.1 * 1.0 (reference) + 0.02 = 0.17
    assert sub.allowed_ms_per_call == pytest.approx(0.17)
    assert sub.overhead_ms_per_call == pytest.approx(0.2 / 3)
    assert not sub.outside_events and sub.time_ms == 0.5 and sub.failure is None
    assert sub.wall_ms_per_call == pytest.approx(0.5 + 0.2 / 3) and sub.stats.n == 10
    assert not ref.outside_events and ref.time_ms == 1.0 and not base.outside_events


def test_work_outside_the_events_uses_wall_time_less_the_baseline_overhead() -> None:
    sub, ref, _ = finalize([timing("submission", 0.5, 3.15), timing("reference", 1.0, 0.15),
                            timing("baseline", 0.0, 0.15)])
    assert sub.outside_events and sub.overhead_ms_per_call == pytest.approx(1.05)
    assert sub.time_ms == pytest.approx(1.5)  # (3 * 0.5 + 3.15) / 3 - 0.05, not the 0.5 ms events say
    assert not ref.outside_events


@pytest.mark.parametrize("per_call, flagged", [(0.1, False), (0.31, False), (0.33, True)])
def test_allowance_is_relative_to_the_basis_time(per_call: float, flagged: bool) -> None:
    # baseline 0.1 ms per call; basis 2 ms per call: allowed 0.1 + 0.2 + 0.02 = 0.32 ms per call
    sub, _ = finalize([timing("submission", 0.5, 3 * per_call), timing("baseline", 0.0, 0.3)], basis_ms=2.0)
    assert sub.allowed_ms_per_call == pytest.approx(0.32)
    assert sub.outside_events is flagged


def test_the_allowance_is_the_same_for_every_basis() -> None:
    """Side by side (reference median 1 ms), calibrated (1 ms) or roofline (1 ms): one rule."""
    side = finalize([timing("submission", 0.5, 0.6), timing("reference", 1.0, 0.9), timing("baseline", 0.0, 0.15)])
    calibrated = finalize([timing("submission", 0.5, 0.6), timing("baseline", 0.0, 0.15)], basis_ms=1.0)
    assert side[0].allowed_ms_per_call == pytest.approx(calibrated[0].allowed_ms_per_call)
    assert side[0].outside_events is calibrated[0].outside_events is True   # 0.2 > 0.05 + 0.1 + 0.02


def test_a_hidden_30_us_per_call_is_caught_at_a_26_us_kernel() -> None:
    """ex04 at n = 2^24: 26 us per call; 30 us per call hidden from the events over 12 calls."""
    base = timing("baseline", 0.0, 12 * 0.04, calls=12)
    honest, _ = finalize([timing("submission", 0.026, 12 * 0.045, calls=12), base], basis_ms=0.026)
    hider, _ = finalize([timing("submission", 0.026, 12 * (0.04 + 0.030), calls=12), base], basis_ms=0.026)
    assert not honest.outside_events
    assert hider.outside_events and hider.time_ms == pytest.approx(0.056)


def test_a_noisy_baseline_does_not_widen_the_allowance() -> None:
    """A submission can load the machine while the baseline runs: only the baseline's median counts."""
    overheads = [0.3, 0.3, 0.6, 15.0] * 3            # per call 0.1, 0.1, 0.2, 5: median 0.15
    noisy = ContestantTiming("baseline", [([0.0] * 3, o) for o in overheads])
    calm, _ = finalize([timing("submission", 0.5, 0.2 * 3), noisy], basis_ms=0.5)   # allowed 0.22
    hidden, _ = finalize([timing("submission", 0.5, 0.25 * 3), noisy], basis_ms=0.5)
    assert calm.allowed_ms_per_call == pytest.approx(0.22)
    assert not calm.outside_events and hidden.outside_events


def test_the_slack_per_call_is_a_policy_setting() -> None:
    sub, _ = finalize([timing("submission", 0.5, 1.0), timing("baseline", 0.0, 0.2)], slack_ms=0.5)
    assert not sub.outside_events            # allowed 0.2 / 3 + 0.5 per call


@pytest.mark.parametrize("sub_overhead, flagged", [(1.4, False), (1.6, True)])
def test_absolute_bound_without_any_baseline(sub_overhead: float, flagged: bool) -> None:
    (sub,) = finalize([timing("submission", 0.5, sub_overhead)])   # allowed 0.5 ms per call
    assert sub.outside_events is flagged
    assert sub.time_ms == pytest.approx(0.5 + sub_overhead / 3 if flagged else 0.5)


def test_batched_work_gains_nothing_and_is_flagged() -> None:
    """All three calls' work done in the first call: the per-call median would be ~0, the round
    mean is the honest per-call time."""
    batched = ContestantTiming("submission", [([3.0, 0.001, 0.001], 3.2)] * 8)
    honest = timing("reference", 1.0, 0.2, rounds=8)
    sub, ref = finalize([batched, honest])
    assert sub.time_ms == pytest.approx(1.000667, rel=1e-5) and sub.uneven and not sub.outside_events
    assert not ref.uneven


@pytest.mark.parametrize("floor_ms, flagged", [(0.05, True), (0.5, False)])
def test_the_uneven_check_has_the_policys_floor(floor_ms: float, flagged: bool) -> None:
    """A first call of 0.2 ms against 0.02 ms for the others: uneven above a 0.05 ms floor (the
    GPU's), a cold first call below a 0.5 ms one (the host backend's, StopPolicy.uneven_min_ms)."""
    first_slow = ContestantTiming("submission", [([0.2, 0.02, 0.02], 0.3)] * 8)
    (sub,) = finalize([first_slow], uneven_min_ms=floor_ms)
    assert sub.uneven is flagged


def test_failed_baseline_falls_back_to_the_absolute_bound() -> None:
    sub, ref = finalize([timing("submission", 0.5, 1.0), timing("reference", 1.0, 0.0, failure="crash: x")])
    assert not sub.outside_events and sub.time_ms == 0.5  # 1 ms <= 3 * 0.5 ms absolute
    assert ref.failure == "crash: x" and ref.time_ms is None


def test_failures_propagate() -> None:
    failed, empty = finalize([timing("submission", 0.5, 0.0, rounds=4, failure="timeout: no answer"),
                              ContestantTiming("reference")])
    assert (failed.failure, failed.time_ms, failed.outside_events) == ("timeout: no answer", None, False)
    assert failed.stats.n == 4 and failed.samples == (0.5,) * 4
    assert (empty.failure, empty.stats, empty.time_ms, empty.samples) == ("no samples", None, None, ())


# -- run_benchmark with fake workers ----------------------------------------------------------------------
MISSING = object()


class Fake:
    """A worker that answers warmup/time requests; ``times(round)`` gives the per-set times."""

    def __init__(self, name: str, log: list, times: Callable[[int], Any], wall_s: float = 0.0,
                 fail: Callable[[str, int], Outcome | None] = lambda op, r: None):
        self.name, self.log, self.times, self.wall_s, self.fail = name, log, times, wall_s, fail
        self.rounds = 0
        self.messages: list[tuple[dict, float]] = []

    def __call__(self, message: dict[str, Any], timeout: float, on_reply: Callable[[], None] | None = None) -> Outcome:
        self.messages.append((message, timeout))
        op = message["op"]
        if op == "time":
            self.rounds += 1
        self.log.append(f"{op}:{self.name}")
        failure = self.fail(op, self.rounds)
        if on_reply is not None and (failure is None or failure.kind not in ("timeout", "crash")):
            on_reply()   # a reply was read (a timed-out or crashed worker sends none)
        if failure is not None:
            return failure
        if op in ("release", "map"):
            return Outcome(True, data={})
        if op == "warmup":
            return Outcome(True, data={}, wall_s=0.03)
        times = self.times(self.rounds)
        return Outcome(True, data={} if times is MISSING else {"times_ms": times}, wall_s=self.wall_s)


def bench(fakes: list[Fake], log: list, policy: StopPolicy, n_sets: int = 2,
          verify: Callable[[str], str | None] = lambda where: None, seed: int = 1,
          drain: Callable[[float], float] = lambda limit_s: 0.0):
    arenas = iter(range(1, 10**6))

    def redraw() -> None:
        log.append("redraw")

    def bind() -> Binding:
        k = next(arenas)
        log.append(f"bind:{k}")
        return Binding([[{"set": j, "arena": k}] for j in range(n_sets)], (f"h{k}",), lambda: log.append(f"free:{k}"))

    def check(where: str) -> str | None:
        log.append(f"verify:{where}")
        return verify(where)

    rounds: list[int] = []
    contestants = [Contestant(f.name, f, lambda f=f: log.append(f"pause:{f.name}"),
                              lambda f=f: log.append(f"resume:{f.name}"), lambda f=f: log.append(f"stop:{f.name}"))
                   for f in fakes]
    results = run_benchmark(contestants, Rig(n_sets, redraw, bind, check, drain, fill=lambda: log.append("fill")),
                            policy, flush_bytes=1 << 20,
                            call_timeout_s=1.0, rng=random.Random(seed), progress=rounds.append)
    return results, rounds


STEADY = StopPolicy(min_samples=4, max_samples=100, target_rse=0.01, max_seconds=60.0, warmup_ms=10.0)


def test_protocol_warmup_alternation_and_stop() -> None:
    log: list[str] = []
    sub = Fake("submission", log, lambda r: [0.5, 0.5], wall_s=0.00125)  # 0.25 ms outside the events
    ref = Fake("reference", log, lambda r: [1.0, 1.0], wall_s=0.0022)    # 0.2 ms
    (s, r), rounds = bench([sub, ref], log, STEADY)

    def turn(name: str, k: int, previous: int, round_no: int) -> list[str]:
        # mapped (previous unmapped) while nothing is written; inputs written while it is stopped
        return [f"bind:{k}", f"resume:{name}", f"map:{name}", f"pause:{name}", f"free:{previous}", "fill",
                f"resume:{name}", f"time:{name}", f"stop:{name}", f"pause:{name}",
                f"verify:timed round {round_no} of {name}"]   # stopped as soon as its reply is read

    assert log == [
        "redraw",
        "bind:1", "fill", "warmup:submission", "pause:submission", "verify:warm-up of submission",
        "bind:2", "fill", "warmup:reference", "pause:reference", "verify:warm-up of reference",
        "redraw", *turn("submission", 3, 1, 1), *turn("reference", 4, 2, 1),   # every set re-drawn before every
        "redraw", *turn("reference", 5, 4, 2), *turn("submission", 6, 3, 2),   # round, fresh buffers for every
        "redraw", *turn("submission", 7, 6, 3), *turn("reference", 8, 5, 3),   # turn, the last turn's freed once
        "redraw", *turn("reference", 9, 8, 4), *turn("submission", 10, 7, 4),  # the worker unmapped them
        "resume:submission", "release:submission", "free:10",                  # nobody is left stopped or mapped
        "resume:reference", "release:reference", "free:9",
    ]  # one sample (the round mean) per round, zero spread: done after min_samples = 4 rounds
    assert rounds == [1, 2, 3, 4]
    warm, warm_timeout = sub.messages[0]
    assert warm == {"op": "warmup", "sets": [[{"set": 0, "arena": 1}], [{"set": 1, "arena": 1}]], "ms": 10.0}
    assert warm_timeout == pytest.approx(1.0 + 0.04)
    timed = [m for m, _ in sub.messages if m["op"] == "time"]
    maps = [m for m, _ in sub.messages if m["op"] == "map"]
    assert [m["close"] for m in maps] == [["h1"], ["h3"], ["h6"], ["h7"]]   # the previous turn's buffers
    assert [m["sets"][0][0]["arena"] for m in maps] == [3, 6, 7, 10]
    # the timed request names only the order: it runs on the sets of the map before it, and nothing
    # is mapped, unmapped or sent as descriptors inside the timed window
    assert all("close" not in m and "sets" not in m for m in timed) and len(timed) == 4
    for message, timeout in sub.messages:
        if message["op"] == "time":
            assert message["flush_bytes"] == 1 << 20 and sorted(message["order"]) == [0, 1] and timeout == 1.0 * 2 + 5
    assert sub.messages[-1][0] == {"op": "release", "handles": ["h10"]}
    assert s.samples == (0.5,) * 4 and s.time_ms == 0.5 and s.failure is None
    assert s.wall_ms_per_call == pytest.approx(0.625) and s.overhead_ms_per_call == pytest.approx(0.125)   # 1.25 ms per 2 calls
    assert r.samples == (1.0,) * 4 and r.time_ms == 1.0


def test_gpu_work_left_after_the_reply_counts_in_the_wall_time() -> None:
    log: list[str] = []
    sub = Fake("submission", log, lambda r: [0.5, 0.5])
    base = Fake("baseline", log, lambda r: [0.0, 0.0])
    # 3 ms of the submission's GPU work still runs after each of its timed replies; it is measured
    # as soon as the reply is read and the worker stopped, before the walk for its other processes
    # (pause) and before the parent's other checks, which the worker could otherwise fill with work
    (s, b), _ = bench([sub, base], log, STEADY,
                      drain=lambda limit: 3.0 if log[-2:] == ["time:submission", "stop:submission"] else 0.0)
    assert s.drained_ms_per_call == pytest.approx(1.5) and s.overhead_ms_per_call >= 1.0 and s.outside_events
    assert b.drained_ms_per_call == 0.0


def test_a_timed_out_worker_is_drained_after_it_is_stopped() -> None:
    log: list[str] = []
    drains: list[str] = []
    sub = Fake("submission", log, lambda r: [0.5, 0.5],
               fail=lambda op, r: Outcome(False, "timeout", "no answer") if op == "time" else None)
    ref = Fake("reference", log, lambda r: [1.0, 1.0])

    def drain(limit_s: float) -> float:
        drains.append(log[-1])
        return 0.0
    (s, r), _ = bench([sub, ref], log, STEADY, drain=drain)
    assert s.failure is not None and s.failure.startswith("timeout") and "stop:submission" not in log
    assert "pause:submission" in drains   # no reply, so no on_reply: drained after the full pause


def test_gpu_work_queued_before_the_timed_request_counts_in_the_wall_time() -> None:
    """Work the submission queued to run once the parent writes the inputs (after the map request,
    while it is stopped) is waited for before its timed request and charged to that round."""
    log: list[str] = []
    sub = Fake("submission", log, lambda r: [0.5, 0.5])
    base = Fake("baseline", log, lambda r: [0.0, 0.0])
    (s, b), _ = bench([sub, base], log, STEADY,
                      drain=lambda limit: 4.0 if log[-1] == "fill" and log[-4] == "map:submission" else 0.0)
    assert s.drained_ms_per_call == pytest.approx(2.0) and s.overhead_ms_per_call == pytest.approx(1.5) and s.outside_events
    assert b.drained_ms_per_call == 0.0


def test_a_gpu_still_busy_after_the_reply_fails_the_round() -> None:
    log: list[str] = []
    sub = Fake("submission", log, lambda r: [0.5, 0.5])
    calls = iter(range(10**6))
    (s,), rounds = bench([sub], log, STEADY, drain=lambda limit: math.inf if next(calls) == 2 else 0.0)
    assert s.failure_kind == "gpu_busy" and "left on the GPU" in s.failure and rounds == [1]


def bounded_busy(after: int = 0, limit: int = 200) -> Callable[[float], float]:
    """A drain that finds the GPU busy from its ``after``-th call on (another process's work); it
    raises past ``limit`` calls, so rounds that would never end fail the test instead of hanging it."""
    calls = iter(range(10**9))

    def drain(limit_s: float) -> float:
        k = next(calls)
        if k > limit:
            raise AssertionError(f"{limit} drains and the rounds go on: a busy GPU must end them")
        return math.inf if k >= after else 0.0
    return drain


def test_a_gpu_another_process_keeps_busy_ends_the_benchmark() -> None:
    """Busy from the first timed round on (two grades timing on one GPU saw each other's probes for
    ever): the submission fails first, then each trusted contestant the busy GPU meets, and it ends
    (before, their rounds went on adding no sample for as long as the other grade ran)."""
    log: list[str] = []
    sub = Fake("submission", log, lambda r: [0.5, 0.5])
    ref = Fake("reference", log, lambda r: [1.0, 1.0])
    base = Fake("baseline", log, lambda r: [0.0, 0.0])
    (s, r, b), rounds = bench([sub, ref, base], log, STEADY, drain=bounded_busy(after=3))
    assert s.failure_kind == "gpu_busy" and r.failure_kind == "gpu_busy" and b.failure_kind == "gpu_busy"
    assert rounds == [1] and sub.rounds + ref.rounds + base.rounds <= 3   # one round at most each


def test_without_a_submission_a_busy_gpu_fails_the_contestant() -> None:
    """`grade calibrate` times the reference alone: a GPU busy for good fails it (refused) instead
    of rounds that never add a sample."""
    log: list[str] = []
    ref = Fake("reference", log, lambda r: [1.0, 1.0])
    base = Fake("baseline", log, lambda r: [0.0, 0.0])
    (r, b), rounds = bench([ref, base], log, STEADY, drain=bounded_busy(after=2))
    assert r.failure_kind == "gpu_busy" and b.failure_kind == "gpu_busy" and rounds == [1]


def test_stops_at_max_samples_when_noisy() -> None:
    log: list[str] = []
    sub = Fake("submission", log, lambda r: [1.0 + 8.0 * (r % 2), 1.0])  # round means 5, 1, 5, 1, ...
    policy = StopPolicy(min_samples=2, max_samples=6, target_rse=0.01, max_seconds=60.0)
    (s,), rounds = bench([sub], log, policy)
    assert rounds == [1, 2, 3, 4, 5, 6] and s.stats.n == 6 and log.count("redraw") == 7


def test_stops_at_max_seconds() -> None:
    log: list[str] = []
    sub = Fake("submission", log, lambda r: [1.0, 9.0])
    (s,), rounds = bench([sub], log, StopPolicy(min_samples=100, max_samples=1000, max_seconds=0.0))
    assert rounds == [1, 2, 3] and s.stats.n == 3   # min_rounds even when out of time


def test_verify_failure_is_the_contestants_failure() -> None:
    log: list[str] = []
    sub = Fake("submission", log, lambda r: [0.5, 0.5])
    ref = Fake("reference", log, lambda r: [1.0, 1.0])
    policy = StopPolicy(min_samples=6, max_samples=100, target_rse=0.01, max_seconds=60.0)
    (s, r), rounds = bench([sub, ref], log, policy,
                           verify=lambda where: "input set 1: wrong output" if where == "timed round 2 of submission"
                           else None)
    assert s.failure == "input set 1: wrong output" and s.failure_kind == "wrong" and s.time_ms is None
    assert sub.rounds == 2                        # never timed again
    assert r.failure is None and r.stats.n == 6 and rounds == [1, 2, 3, 4, 5, 6]


def test_worker_failure_is_recorded() -> None:
    log: list[str] = []
    sub = Fake("submission", log, lambda r: [0.5, 0.5],
               fail=lambda op, r: Outcome(False, "timeout", "no answer within 7 s") if op == "time" else None)
    (s,), rounds = bench([sub], log, STEADY)
    assert s.failure == "timeout: no answer within 7 s" and s.time_ms is None and rounds == [1]


def test_a_failure_reported_when_the_shape_ends_is_the_contestants() -> None:
    """Timed rounds do not flush the kernel tracer (the flush stays out of the timed window): what
    they ran is checked with the release that ends the shape."""
    log: list[str] = []
    sub = Fake("submission", log, lambda r: [0.5, 0.5],
               fail=lambda op, r: Outcome(False, "foreign_kernel", "cupy_sum ran during solve") if op == "release"
               else None)
    (s,), _ = bench([sub], log, STEADY)
    assert s.failure == "after the timed rounds: foreign_kernel: cupy_sum ran during solve"
    assert s.failure_kind == "foreign_kernel" and s.time_ms is None and log[-2].startswith("release:")


@pytest.mark.parametrize("fail, verify, message", [
    (lambda op, r: Outcome(False, "crash", "the worker process killed by SIGSEGV") if op == "warmup" else None,
     lambda w: None,
     "during warm-up: the worker process killed by SIGSEGV"),
    (lambda op, r: None, lambda w: "input set 0: modified input 'x'" if w == "warm-up of submission" else None,
     "during warm-up: input set 0: modified input 'x'"),
], ids=["worker-crash", "verify"])
def test_warmup_failure_skips_timing(fail, verify, message: str) -> None:
    log: list[str] = []
    sub = Fake("submission", log, lambda r: [0.5, 0.5], fail=fail)
    ref = Fake("reference", log, lambda r: [1.0, 1.0])
    (s, r), _ = bench([sub, ref], log, STEADY, verify=verify)
    assert s.failure == message and sub.rounds == 0 and s.samples == ()
    assert r.failure is None and r.stats.n == 4


@pytest.mark.parametrize("times", [
    [0.5],                  # one time for two sets
    [0.5, 0.5, 0.5],
    [0.5, -0.1],
    [0.5, float("nan")],
    [0.5, float("inf")],
    MISSING,                # no times_ms in the reply
], ids=["short", "long", "negative", "nan", "inf", "missing"])
def test_malformed_times_are_a_failure(times) -> None:
    log: list[str] = []
    sub = Fake("submission", log, lambda r: times)
    ref = Fake("reference", log, lambda r: [1.0, 1.0])
    (s, r), rounds = bench([sub, ref], log, STEADY)
    assert s.failure == "the worker reported malformed times" and s.time_ms is None and s.samples == ()
    assert sub.rounds == 1 and r.failure is None and r.stats.n == 4 and rounds == [1, 2, 3, 4]


@pytest.mark.parametrize("times", [["fast", 1.0], [None, None]], ids=["string", "none"])
def test_non_numeric_times_are_a_failure(times) -> None:
    log: list[str] = []
    (s,), _ = bench([Fake("submission", log, lambda r: times)], log, STEADY)
    assert s.failure == "the worker reported malformed times"


def test_the_baseline_is_never_verified() -> None:
    """The no-op baseline writes no output: checking it would fail it and lose the overhead measure."""
    log: list[str] = []
    sub = Fake("submission", log, lambda r: [0.5, 0.5])
    base = Fake("baseline", log, lambda r: [0.0, 0.0])
    (s, b), _ = bench([sub, base], log, STEADY, verify=lambda where: "never written" if "baseline" in where else None)
    assert b.failure is None and b.stats.n >= 4 and s.failure is None
    assert not any("of baseline" in entry for entry in log if entry.startswith("verify:"))


def test_the_wall_clock_starts_when_the_worker_is_continued() -> None:
    # a worker continued 2 ms before its timed request was sent (its own threads made the parent's
    # SIGCONT loop slow, say) had those 2 ms to work in: they are inside its round's wall time
    log: list[str] = []
    sub = Fake("submission", log, lambda r: [0.5, 0.5])
    base = Fake("baseline", log, lambda r: [0.0, 0.0])
    contestants = [Contestant("submission", sub, resume=lambda: time.perf_counter() - 0.002),
                   Contestant("baseline", base, resume=lambda: None)]
    rig = Rig(2, lambda: None, lambda: Binding([[{"set": 0}], [{"set": 1}]], ("h",), lambda: None),
              lambda where: None, lambda limit_s: 0.0, fill=lambda: None)
    s, b = run_benchmark(contestants, rig, STEADY, flush_bytes=0, call_timeout_s=1.0, rng=random.Random(1))
    # 2 ms of wall time against 1 ms of reported calls: 0.5 ms per call outside its events, so
    # its time is the wall clock's, 1 ms per call
    assert s.overhead_ms_per_call == pytest.approx(0.5, abs=0.05) and s.outside_events
    assert s.time_ms == pytest.approx(1.0, abs=0.05)
    assert b.overhead_ms_per_call < 0.05 and not b.outside_events
