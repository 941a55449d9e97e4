"""The whole pipeline on the CPU: real specs (shrunk to small shapes) and numpy fake submissions,
graded through the host backend (shared memory, a real worker process)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from grader.cases import PROFILES
from grader.timing import StopPolicy
from tests.conftest import FIXTURES, fake_submission as fake, grade_folder, spec_of

SOFTMAX = """
import numpy as np
def solve(x, y):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    y[...] = e / e.sum(axis=1, keepdims=True)
"""
FAST = StopPolicy(min_samples=5, max_samples=30, max_seconds=0.5, warmup_ms=1, outside_slack_ms=0.5)


def small_softmax():
    spec = spec_of("ex07_softmax")
    edges = tuple(e for e in spec.edge_cases if e.as_dict()["rows"] * e.as_dict()["cols"] <= 2**16)
    benches = tuple(replace(b, dims=(("rows", 16), ("cols", 64 * (i + 1)))) for i, b in enumerate(spec.benchmarks))
    return replace(spec, edge_cases=edges, benchmarks=benches)


@pytest.fixture
def profile():
    return replace(PROFILES["quick"], examples=12, max_elements=2**13)


def test_a_correct_submission_passes_every_case_and_is_timed_against_the_reference(tmp_path, profile):
    ref = fake(tmp_path, SOFTMAX, "ref")
    sub = fake(tmp_path, SOFTMAX, "sub")
    r = grade_folder(small_softmax(), sub, backend="host", profile=profile, reference=ref, policy=FAST)
    assert r.status == "graded" and r.correct
    assert {c.origin for c in r.cases} == {"edge", "hypothesis"}
    assert len(r.benchmarks) == 2
    for b in r.benchmarks:
        assert b.reference is not None and b.reference.stats.n >= FAST.min_rounds   # rounds, even on a busy CPU
        assert b.submission.stats.n >= FAST.min_rounds and b.ratio is not None
    assert r.score.basis == "side-by-side" and r.score.correctness == 40


def test_a_wrong_submission_is_shrunk_to_the_smallest_failing_shape(tmp_path, profile):
    body = SOFTMAX + "    if x.shape[1] > 40:\n        y[:, 40:] = 0\n"
    r = grade_folder(small_softmax(), fake(tmp_path, body), backend="host", profile=profile)
    f = r.smallest_failure
    assert f is not None and not r.correct and r.score.total == 0
    assert f.token.startswith("rows=1,cols=41/"), f.token  # shrunk: one row, the first failing width
    assert "every element with cols >= 40" in " ".join(f.details)
    assert r.repro and f.token in r.repro


def test_overflowing_softmax_fails_on_large_inputs(tmp_path, profile):
    body = "import numpy as np\ndef solve(x, y):\n    e = np.exp(x)\n    y[...] = e / e.sum(axis=1, keepdims=True)\n"
    r = grade_folder(small_softmax(), fake(tmp_path, body), backend="host", profile=profile)
    assert not r.correct
    assert "uniform(low=-10000" in r.smallest_failure.description or "mean=8000" in r.smallest_failure.description


def test_modifying_an_input_fails(tmp_path, profile):
    body = SOFTMAX + "    x[0, 0] = 0\n"
    r = grade_folder(small_softmax(), fake(tmp_path, body), backend="host", profile=profile, benchmark=False)
    assert not r.correct
    assert "modified input 'x'" in r.smallest_failure.message


def test_a_single_case_can_be_rerun(tmp_path, profile):
    body = SOFTMAX + "    if x.shape[1] > 40:\n        y[:, 40:] = 0\n"
    sub = fake(tmp_path, body)
    r = grade_folder(small_softmax(), sub, backend="host", profile=profile,
                     case_token="rows=2,cols=50/x=0/seed=5")
    assert len(r.cases) == 1 and r.cases[0].origin == "repro" and r.cases[0].status == "fail"
    assert r.score.total == 0 and "not scored" in r.score.note


def test_crashes_are_recorded_against_their_case_and_grading_goes_on(tmp_path, profile):
    body = SOFTMAX.replace("def solve(x, y):", "def solve(x, y):\n    import os\n    if x.shape[1] == 33: os._exit(3)")
    r = grade_folder(small_softmax(), fake(tmp_path, body), backend="host", profile=profile, benchmark=False)
    crashed = [c for c in r.cases if c.status == "crash"]
    assert crashed and all(",cols=33/" in c.token for c in crashed)
    assert any(c.passed for c in r.cases) and r.worker_restarts >= 1


def test_outputs_of_timed_runs_are_checked(tmp_path, profile):
    """A submission that is right when checked once but replays a cached answer later fails timing."""
    body = SOFTMAX.replace("def solve(x, y):", "_cache = {}\ndef solve(x, y):\n"
                           "    key = x.shape\n    if key in _cache:\n        y[...] = _cache[key]; return")
    body += "    _cache[x.shape] = y.copy()\n"
    ref = fake(tmp_path, SOFTMAX, "ref")
    r = grade_folder(small_softmax(), fake(tmp_path, body), backend="host", profile=profile, reference=ref,
                     policy=FAST)
    # correctness cases use fresh shapes mostly (a generated case may repeat one: then correctness
    # fails already); the timing rounds re-draw inputs of a fixed shape
    failures = [b.submission.failure for b in r.benchmarks if b.submission.failure]
    assert (failures and "wrong output" in failures[0]) or (not r.correct and not r.benchmarks)
    assert not r.correct and r.score.total == 0


def test_time_outside_the_events_is_counted_and_flagged(tmp_path, profile):
    """On the host backend the worker's 'events' are perf_counter readings; a submission that
    slows the real work down but makes the clock lie is caught by the parent's wall clock."""
    body = SOFTMAX.replace("def solve(x, y):", "import time\n_real = time.perf_counter\n"
                           "time.perf_counter = lambda: _real() * 1e-3\ndef solve(x, y):\n    _t = _real()\n"
                           "    while _real() - _t < 0.004: pass")
    ref = fake(tmp_path, SOFTMAX, "ref")
    r = grade_folder(small_softmax(), fake(tmp_path, body), backend="host", profile=profile, reference=ref,
                     policy=FAST)
    assert r.correct
    assert all(b.submission.outside_events for b in r.benchmarks)
    assert all(b.submission.time_ms >= 3.0 for b in r.benchmarks)  # ~4 ms (less the noisy harness overhead), not ~0
    assert any("outside the timed events" in f for f in r.flags)


def test_missing_files_are_not_graded(tmp_path, profile):
    empty = tmp_path / "empty"
    empty.mkdir()
    r = grade_folder(small_softmax(), empty, backend="host", profile=profile)
    assert r.status == "not_graded" and r.reason_kind == "bad_submission"
    assert "kernel.cu: missing" in r.reason


def test_forbidden_features_are_rejected_before_running(tmp_path, profile):
    spec = replace(small_softmax(), forbidden=(r"cupy\.matmul",))
    body = "import cupy\n# cupy.matmul in a comment is fine\ndef solve(x, y):\n    cupy.matmul(x, x)\n"
    r = grade_folder(spec, fake(tmp_path, body), backend="host", profile=profile)
    assert r.status == "not_graded" and r.reason_kind == "forbidden"
    assert r.reason.startswith("solution.py:4: uses 'cupy.matmul'")


def test_course_fixture_exercise_grades_fully(profile):
    from grader.spec import load_spec
    spec = load_spec(FIXTURES / "course" / "exercises" / "ex90_add" / "spec.toml")
    sol = FIXTURES / "course" / "solutions" / "ex90_add"
    r = grade_folder(spec, sol, backend="host", profile=profile, reference=sol, policy=FAST)
    assert r.correct and r.score.correctness == 30


def test_running_out_of_the_case_budget_is_reported(tmp_path, profile):
    spec = small_softmax()
    spec = replace(spec, limits=replace(spec.limits, total_s=1.0))   # cases may use 0.6 s
    body = SOFTMAX.replace("def solve(x, y):", "import time\ndef solve(x, y):\n    time.sleep(0.15)")
    r = grade_folder(spec, fake(tmp_path, body), backend="host", profile=profile, benchmark=False)
    assert r.status == "graded" and len(r.cases) < len(spec.edge_cases) + profile.examples
    assert any("[limits] total_s = 1 s" in f for f in r.flags), r.flags


class _Backend:
    """A backend that reports ``free`` bytes of device memory (None: not limited)."""
    name = "cuda"

    def __init__(self, free):
        self.free = free

    def free_bytes(self):
        return self.free


@pytest.mark.parametrize("free, total, expected", [
    (None, None, 12),             # 0.6 ms of harness per round over 0.05 ms per call
    (None, 100 * 2**20, 3),       # 35 % of 100 MiB holds 3 sets of 10 MiB
    (50 * 2**20, None, 4),        # 80 % of 50 MiB free holds 4
    (50 * 2**20, 100 * 2**20, 3),  # the smaller budget wins
    (2**20, None, 1),             # not even one fits: one set, and the arena says why if it fails
])
def test_sets_per_shape_fit_in_the_memory_that_is_free(free, total, expected):
    from types import SimpleNamespace

    from grader.grade import Grader
    g = SimpleNamespace(opt=SimpleNamespace(sets=None), backend=_Backend(free),
                        device=None if total is None else SimpleNamespace(memory_bytes=total))
    assert Grader.sets_for(g, 0.01, 10 * 2**20) == expected


@pytest.mark.parametrize("from_", ["run_case", "property_cases", "benchmark"])
def test_no_device_memory_for_the_inputs_is_an_error_of_the_machine_not_a_score(tmp_path, monkeypatch, from_):
    """The GPU fills up (another process) from the first case, from the hypothesis cases or from timing."""
    import json

    from click.testing import CliRunner

    from grader import cli
    from grader.grade import Grader
    from grader.sandbox.buffers import DeviceMemoryError, HostBackend

    full = []
    step = getattr(Grader, from_)

    def filled(self, *args, **kwargs):
        full.append(True)
        return step(self, *args, **kwargs)
    monkeypatch.setattr(Grader, from_, filled)
    raw = HostBackend.raw

    def alloc(self, total):
        if full:
            raise DeviceMemoryError(total, 3 * 2**30)
        return raw(self, total)
    monkeypatch.setattr(HostBackend, "raw", alloc)
    course = FIXTURES / "course"
    out = CliRunner().invoke(cli.main, ["90", "--root", str(course), "--backend", "host", "--submission",
                                        str(course / "solutions" / "ex90_add"), "--json", str(tmp_path / "r.json")])
    assert out.exit_code == cli.EXIT_ERROR, out.output
    assert "the GPU has 3.0 GiB free" in out.output and "another process" in out.output
    assert "Traceback" not in out.output and "grader error" not in out.output
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["reason_kind"] == "device_memory" and data["score"]["total"] is None
