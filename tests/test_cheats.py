"""The cheat corpus: submissions that try to game the grader, each with what should catch it.

Every ``tests/cheats/<exercise>/<name>/`` holds ``solution.py`` (first line ``# cheat: <what it
tries>``), ``kernel.cu`` (empty for CPU-side cheats) and ``cheat.toml``:

    tries       = one line: what the cheat tries
    backend     = "host" (numpy in shared memory, runs in CI) or "cuda" (CuPy over CUDA IPC, GPU only)
    exercise    = host: a course fixture exercise (ex90_add, ex91_axpy); cuda: a real exercise
    expect      = "incorrect"        correctness fails, total 0
                | "flag"             graded, with a review flag
                | "zero_performance" correct, but 0 performance points
                | "rejected"         a static or run-time check refuses it: not graded, or a case
                                     refused (a forbidden library loaded), total 0
                | "no_gain"          correct, and the trick bought nothing: its slow kernel still
                                     scores below full performance (fresh buffers every round)
    detected_by = a lower-case substring of the result's text (see :func:`result_text`): what caught it;
                  alternatives separated by " | " where either of two checks may (a time patch just
                  above the wall-clock slack is caught by that bound or, when the worker's own
                  harness overhead happens to run low, by the implausibility check)
    kernel      = optional, instead of the folder's own kernel.cu: a file, or a list of files joined
                  in order, each in the folder or else in tests/cheats/_kernels/ (kernel parts several
                  cheats share unchanged), that make its kernel.cu (conftest.cheat_submission)
    base        = optional, instead of the folder's own solution.py: another cheat of the exercise
                  whose solution.py (and kernel, unless this one has its own) this cheat varies
    change      = optional, with base: [["OLD", "NEW"], ...], replacements in the base's solution.py
                  (conftest.cheat_solution; its first line becomes this cheat's "# cheat: <tries>")

Host cheats are graded here with small profiles; cuda ones are marked ``gpu``.
"""
from __future__ import annotations

import ast
import os
import signal
import time
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from grader.cases import PROFILES
from grader.grade import GradeResult
from grader.spec import load_spec
from grader.timing import StopPolicy
from tests.conftest import (CHEATS, FIXTURES, ROOT, SHARED_KERNELS, cheat_kernel_names, cheat_kernel_parts,
                            cheat_meta, cheat_solution, cheat_submission, grade_folder)

COURSE = FIXTURES / "course"
FOLDERS = sorted(p.parent for p in CHEATS.glob("*/*/cheat.toml"))
EXPECT = ("incorrect", "flag", "zero_performance", "rejected", "no_gain")
BACKENDS = ("host", "cuda")
KEYS = {"tries", "backend", "exercise", "expect", "detected_by"}
OPTIONAL_KEYS = {"kernel", "base", "change"}
# Case statuses that are a refusal rather than a wrong answer.
REFUSALS = {"forbidden", "forbidden_library", "foreign_kernel", "tampered", "required"}

HOST_PROFILE = replace(PROFILES["quick"], examples=6, max_elements=2**13)
# The host backend times Python calls over a socket on a CPU that CI shares: 0.5 ms per call of
# slack (the GPU default is 0.02); the timing cheats here hide 2-4 ms per call.
# The first call of a host round runs about 4x the others (median 57 us against 13 us, measured on
# a 2-core machine like CI's, 2026-12-02, benchmarks/RESULTS.md; probably cold caches: the worker
# was just resumed), which crosses the GPU's 50 us floor of the uneven-round check on a slow or
# loaded machine (CI, ad776d1: the honest ex91 reference flagged). Host grades use a 0.5 ms floor,
# like their outside slack; the host cheat this check catches (ex90_add/batch_sets_first_call)
# spends 1 ms per set, 3 ms or more, in its first call and almost nothing in the others.
HOST_POLICY = StopPolicy(min_samples=5, max_samples=20, max_seconds=0.3, warmup_ms=1, outside_slack_ms=0.5,
                         uneven_min_ms=0.5)
GPU_PROFILE = replace(PROFILES["quick"], examples=10)
GPU_POLICY = StopPolicy(min_samples=10, max_samples=60, max_seconds=1.0, warmup_ms=10)


def with_test_caps(spec):
    """The spec with a 256 MiB host-memory cap, so the memory cheat is caught without filling the
    CI machine."""
    return replace(spec, limits=replace(spec.limits, host_memory_gib=0.25))


def cheat_id(folder: Path) -> str:
    return f"{folder.parent.name}/{folder.name}"


def by_backend(backend: str) -> list[Path]:
    return [f for f in FOLDERS if cheat_meta(f).get("backend") == backend]


def exercise_dirs(m: dict) -> tuple[Path, Path]:
    """(exercise folder, reference solution folder) for a cheat's metadata."""
    base = COURSE if m["backend"] == "host" else ROOT
    return base / "exercises" / m["exercise"], base / "solutions" / m["exercise"]


def result_text(r: GradeResult) -> str:
    """Everything a person would read about what went wrong, lower-cased: the refusal reason,
    every failing case's message and details, timing failures, the score note and breakdown,
    and the review flags."""
    s = r.score
    parts = [r.reason_kind, r.reason, s.note,
             f"score: correctness {s.correctness:g} of {s.correctness_max:g}, "
             f"performance {s.performance:g} of {s.performance_max:g}"]
    for c in r.cases:
        if not c.passed:
            parts += [c.status, c.message, *c.details]
    for b in r.benchmarks:
        parts += [b.submission.failure or ""]
    parts += list(r.flags)
    return "\n".join(p for p in parts if p).lower()


def check_expectation(r: GradeResult, m: dict) -> None:
    text = result_text(r)
    assert r.reason_kind != "grader_error" and not any(c.status == "grader_error" for c in r.cases), text
    expect = m["expect"]
    if expect == "rejected":
        refused = r.status == "not_graded" or any(c.status in REFUSALS for c in r.cases)
        assert refused and r.score.total == 0, text
    else:
        assert r.status == "graded", text
    if expect == "incorrect":
        assert not r.correct and r.score.total == 0, text
    elif expect == "flag":
        assert r.flags, text
    elif expect == "zero_performance":
        assert r.correct and r.score.performance == 0, text
    elif expect == "no_gain":
        assert r.correct and r.score.performance < r.score.performance_max, text
    assert any(alt in text for alt in m["detected_by"].lower().split(" | ")), f"{m['detected_by']!r} not in:\n{text}"


def check_reports(r: GradeResult) -> None:
    """Every report of a cheat's result renders (text, html, gradescope, junit: no exception, e.g.
    a KeyError on a kernel entry the worker's reply forged) and its JSON validates against the
    schema: nothing a submission sends back breaks the report it is graded in."""
    import json

    import jsonschema

    from grader.cli import EXIT_NOT_GRADED, EXIT_OK
    from grader.report.formats import FORMATS, render
    from grader.report.json_report import schema
    code = EXIT_OK if r.status == "graded" else EXIT_NOT_GRADED
    texts = {fmt: render(r, fmt, code) for fmt in FORMATS}
    assert texts["text"].strip()
    for fmt, text in texts.items():   # written to a UTF-8 file or terminal as is: nothing there may act on it
        text.encode("utf-8")           # a lone surrogate (a reply's "\ud800") raises here
        bad = sorted({hex(ord(ch)) for ch in text if (ord(ch) < 0x20 and ch not in "\n\t") or 0x7f <= ord(ch) < 0xa0})
        assert not bad, f"the {fmt} report holds control characters {bad}"
    ET.fromstring(texts["junit"].encode())   # the JUnit file parses (XML 1.0 forbids most control characters)
    try:
        jsonschema.validate(json.loads(texts["json"]), schema())
    except jsonschema.ValidationError as exc:
        pytest.fail(f"the JSON report does not validate: {exc.message} at {list(exc.absolute_path)}")


def files_of(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _pids() -> set[int]:
    return {int(d.name) for d in Path("/proc").iterdir() if d.name.isdigit()}


def escaped(before: set[int], grace_s: float = 1.0) -> list[int]:
    """Processes started since ``before`` that still run in a (now deleted) worker directory and
    are neither a worker nor a resource tracker: what a submission left behind. Only this test
    process's descendants count (an orphan is re-parented here, the grader being a child
    subreaper): another grade running on the machine at the same time is not this one's. Waits up
    to ``grace_s`` for them to go away."""
    from grader.sandbox.watch import descends_from
    end = time.monotonic() + grace_s
    while True:
        left = []
        for pid in _pids() - before:
            try:
                cwd = os.readlink(f"/proc/{pid}/cwd")
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if ("grade-worker-cwd-" in cwd and b"grader.sandbox.worker" not in cmd and b"resource_tracker" not in cmd
                    and descends_from(pid, os.getpid())):
                left.append(pid)
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.1)


def grade_host(folder: Path, spec_path: Path, reference: Path) -> tuple[GradeResult, list[int]]:
    """Grade on the host backend; also the processes the submission left running (killed here)."""
    before = _pids()
    r = grade_folder(with_test_caps(load_spec(spec_path)), folder, backend="host", reference=reference,
                     profile=HOST_PROFILE, policy=HOST_POLICY)
    left = escaped(before)
    for pid in left:  # started by the submission graded just now
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return r, left


# -- the corpus is well formed ---------------------------------------------------------------------
def test_the_corpus_covers_enough_cheats():
    assert len(FOLDERS) >= 24
    assert {cheat_meta(f)["backend"] for f in FOLDERS} == set(BACKENDS)
    names = [f.name for f in FOLDERS]
    assert len(names) == len(set(names)), "cheat folder names must be unique"


@pytest.mark.parametrize("folder", FOLDERS, ids=cheat_id)
def test_cheat_folder_is_well_formed(folder):
    m = cheat_meta(folder)
    assert KEYS <= set(m) <= KEYS | OPTIONAL_KEYS, f"cheat.toml keys: {sorted(m)}"
    assert all(isinstance(m[k], str) and m[k].strip() for k in KEYS)
    assert "kernel" not in m or (isinstance(m["kernel"], (str, list)) and m["kernel"]
                                 and all(isinstance(n, str) and n.endswith(".cu") for n in cheat_kernel_names(m)))
    assert "\n" not in m["tries"]
    assert m["backend"] in BACKENDS and m["expect"] in EXPECT
    assert m["detected_by"] == m["detected_by"].lower()
    assert folder.parent.name == m["exercise"]
    source = cheat_solution(folder)
    first = source.splitlines()[0]
    assert first.startswith("# cheat: ") and len(first) > len("# cheat: ") + 5, first
    assert first == f"# cheat: {m['tries']}"
    ast.parse(source, filename=str(folder / "solution.py"))
    # its own kernel.cu or a shared one, never both
    # its own kernel.cu, kernel parts, or its base's kernel; its own solution.py or its base's
    own_kernels = (folder / "kernel.cu").is_file() + ("kernel" in m)
    assert own_kernels == 1 or (own_kernels == 0 and "base" in m), "kernel.cu, kernel = ... or base = ... in cheat.toml"
    assert (folder / "solution.py").is_file() != ("base" in m), "solution.py, or base = ... in cheat.toml"
    assert "change" not in m or "base" in m
    base = folder.parent / m["base"] if "base" in m else None
    assert base is None or (base / "cheat.toml").is_file(), f"base {base}: no such cheat"
    parts = cheat_kernel_parts(folder) or [folder / "kernel.cu" if (folder / "kernel.cu").is_file() or base is None
                                           else (cheat_kernel_parts(base) or [base / "kernel.cu"])[0]]
    assert all(p.is_file() for p in parts), parts
    text = "".join(p.read_text() for p in parts)
    if m["backend"] == "host":
        assert (COURSE / "exercises" / m["exercise"] / "spec.toml").is_file()
        assert text.strip() == ""
    else:
        assert (ROOT / "exercises" / m["exercise"] / "spec.toml").is_file()
        assert text.strip(), "a GPU cheat needs its kernel.cu"


def test_every_shared_kernel_part_is_used_by_several_cheats():
    """A part in tests/cheats/_kernels/ serves two cheats at least (the known gaps, cheats kept for
    the record in tests/known_gaps/, count too); a part one cheat uses lives in its folder."""
    known_gaps = sorted(p.parent for p in (ROOT / "tests" / "known_gaps").glob("*/cheat.toml"))
    used = [n for f in FOLDERS + known_gaps for n in cheat_kernel_names(cheat_meta(f)) if not (f / n).is_file()]
    for k in SHARED_KERNELS.glob("*.cu"):
        assert used.count(k.name) >= 2, f"{k.name}: used by {used.count(k.name)} cheat(s); keep a part used once in its cheat's folder"


# -- host cheats: graded in CI -----------------------------------------------------------------------
@pytest.mark.parametrize("folder", by_backend("host"), ids=cheat_id)
def test_host_cheat_is_caught(folder, tmp_path):
    m = cheat_meta(folder)
    ex, ref = exercise_dirs(m)
    sub = cheat_submission(folder, tmp_path)
    before = files_of(sub)
    r, left = grade_host(sub, ex / "spec.toml", ref)
    assert files_of(sub) == before, "a cheat wrote into its folder"
    check_expectation(r, m)
    check_reports(r)
    assert not left, f"processes {left} outlived the grade"


@pytest.mark.parametrize("exercise", sorted({cheat_meta(f)["exercise"] for f in by_backend("host")}))
def test_the_honest_reference_is_not_flagged(exercise):
    """The control: the same grade of the exercise's own solution is correct and unflagged, so a
    cheat's flag is its own doing."""
    sol = COURSE / "solutions" / exercise
    r, left = grade_host(sol, COURSE / "exercises" / exercise / "spec.toml", sol)
    assert r.correct and r.score.performance > 0, result_text(r)
    assert not r.flags and not left, result_text(r)
    check_reports(r)


# -- cuda cheats: on a GPU -------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("folder", by_backend("cuda"), ids=cheat_id)
def test_cuda_cheat_is_caught(folder, tmp_path):
    m = cheat_meta(folder)
    ex, ref = exercise_dirs(m)
    r = grade_folder(load_spec(ex / "spec.toml"), cheat_submission(folder, tmp_path), backend="cuda",
                     reference=ref if ref.is_dir() else None, profile=GPU_PROFILE, policy=GPU_POLICY)
    check_expectation(r, m)
    check_reports(r)


# -- cuda cheats a compile alone refuses: checked in CI too (NVRTC, no GPU) --------------------------
COMPILE_ALONE = ("forbidden_headers", "function pointer")   # detected_by values the static report finds
@pytest.mark.skipif(__import__("grader.static", fromlist=["x"]).nvrtc_unavailable() is not None,
                    reason="NVRTC cannot be loaded on this machine")
@pytest.mark.parametrize("folder", [f for f in by_backend("cuda") if cheat_meta(f)["detected_by"] in COMPILE_ALONE],
                         ids=cheat_id)
def test_cheat_is_refused_by_the_compile_alone(folder, tmp_path):
    """The PTX of the cheat's own compile names the forbidden header, or calls through a function
    pointer (``grade --compile-only`` and, on the GPU, the refusal before solve both read it); the
    GPU test grades it in full."""
    from grader.static import static_report
    m = cheat_meta(folder)
    rep = static_report(load_spec(ROOT / "exercises" / m["exercise"] / "spec.toml"), cheat_submission(folder, tmp_path))
    assert rep.compiled, rep.problems
    assert any(m["detected_by"] in p for p in rep.problems), rep.problems
