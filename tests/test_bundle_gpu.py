"""The published student bundle on a GPU: no solutions/, so scores come from the calibration file.

Publishes the course into a temporary folder once, then runs ``python3 -m grader.cli`` inside it
(the bundle's own grader, specs and calibration) the way a student does. Marked ``gpu``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CHEATS, FIXTURES, ROOT, cheat_submission, spec_of

pytestmark = pytest.mark.gpu
EXERCISES = sorted(p.name for p in (ROOT / "solutions").iterdir() if (ROOT / "exercises" / p.name).is_dir())


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "course"
    r = subprocess.run([sys.executable, "-m", "grader.cli", "publish", str(out), "--root", str(ROOT),
                        "--no-install-check"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (out / "solutions").exists()
    return out


def grade_in_bundle(bundle: Path, exercise: str, folder: Path, tmp_path: Path) -> dict:
    """``grade EXERCISE --submission FOLDER`` inside the bundle, as JSON (a copy of FOLDER is graded,
    so nothing of the course is next to it)."""
    sub = tmp_path / "submission"
    shutil.copytree(folder, sub, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "result.json"
    env = {**os.environ, "PYTHONPATH": str(bundle)}
    r = subprocess.run([sys.executable, "-m", "grader.cli", exercise, "--submission", str(sub), "--format", "json",
                        "-o", str(out)], cwd=bundle, env=env, capture_output=True, text=True, timeout=900)
    assert out.is_file(), r.stdout[-2000:] + r.stderr[-2000:]
    return json.loads(out.read_text())


def summary(result: dict) -> str:
    return json.dumps({k: result.get(k) for k in ("status", "reason", "score", "flags")}, default=str)[:3000]


# Graded end to end in a bundle without calibration (the roofline basis also sets the allowance for
# time outside the events): the short kernels, where that allowance matters most, and a GEMM. Every
# other exercise's roofline-basis score is computed from its calibration-basis grade, whose timing
# is the same protocol (the reference is never timed side by side in a bundle).
ROOFLINE_END_TO_END = ("ex04_reduction", "ex07_softmax", "ex12_gemm_tensorcore")


def roofline_score(name: str, result: dict) -> float:
    """The total ``result`` would score on the roofline basis: its shapes' ceiling fractions through
    grader.scoring, without the calibrated times."""
    from grader import scoring
    spec = spec_of(name)
    shapes = [scoring.ShapePerf(b["name"], (b["submission"] or {}).get("time_ms"), None, None, b["ceiling_fraction"])
              for b in result["benchmarks"]]
    sc = scoring.score(result["correct"], shapes, spec.thresholds((result.get("device") or {}).get("arch")),
                       spec.points_correctness, spec.points_performance)
    assert sc.basis == "roofline", sc
    return sc.total


@pytest.mark.parametrize("name", EXERCISES)
def test_reference_scores_full_marks_on_the_calibration_basis(bundle: Path, name: str, tmp_path: Path) -> None:
    r = grade_in_bundle(bundle, name, ROOT / "solutions" / name, tmp_path)
    print(f"BUNDLE {name}: {r['score']['total']:.1f} ratios "
          f"{[b.get('ratio') for b in r.get('benchmarks', [])]} flags {r.get('flags')}")
    assert r["status"] == "graded", summary(r)
    assert r["score"]["total"] >= 99, summary(r)
    assert not r["flags"], summary(r)
    roofline = roofline_score(name, r)
    print(f"ROOFLINE (computed) {name}: {roofline:.1f}")
    assert roofline >= 90, f"{name} would score {roofline:.1f} on the roofline basis; " + summary(r)


@pytest.mark.parametrize("name", EXERCISES)
def test_stub_scores_zero_in_the_bundle(bundle: Path, name: str, tmp_path: Path) -> None:
    r = grade_in_bundle(bundle, name, bundle / "student_template" / name, tmp_path)
    assert r["status"] == "graded" and r["score"]["total"] == 0, summary(r)


def assert_naive_below_its_ladder_bound(course: Path, tmp_path: Path) -> None:
    """The ex08 naive fixture, graded inside ``course``, gets under a quarter of the performance points."""
    name = "ex08_layernorm"
    r = grade_in_bundle(course, name, FIXTURES / "gpu" / f"{name}_naive", tmp_path)
    assert r["status"] == "graded", summary(r)
    assert r["score"]["performance"] < 0.25 * spec_of(name).points_performance, summary(r)


def test_naive_fixture_stays_below_its_ladder_bound_in_the_bundle(bundle: Path, tmp_path: Path) -> None:
    assert_naive_below_its_ladder_bound(bundle, tmp_path)


# The bundle's own grader catches these as the course repository's does: a side stream's work is
# flagged (the wall-clock time is used); work a host thread starts after solve returns, once the
# timed round's calls were synchronised, is refused (the late-work window of grader.sandbox.kernel_trace).
@pytest.mark.parametrize("exercise, cheat, caught", [
    ("ex01_vector_add", "nonblocking_stream", "flag"),
    ("ex07_softmax", "host_thread_launch", "refused")])
def test_side_stream_and_host_thread_cheats_are_caught_in_the_bundle(bundle: Path, tmp_path: Path,
                                                                     exercise: str, cheat: str, caught: str) -> None:
    r = grade_in_bundle(bundle, exercise, cheat_submission(CHEATS / exercise / cheat, tmp_path / "cheat"), tmp_path)
    assert r["status"] == "graded", summary(r)
    if caught == "flag":
        assert any("outside the timed events" in f for f in r["flags"]), summary(r)
    else:
        messages = [c.get("message", "") for c in r["cases"] if c["status"] == "foreign_kernel"]
        assert r["score"]["total"] == 0 and any("after a timed round's calls had been synchronised" in m
                                                for m in messages), summary(r)


@pytest.fixture(scope="module")
def uncalibrated(bundle: Path, tmp_path_factory) -> Path:
    """The bundle on a GPU the course never calibrated: its calibration file removed, so the basis
    is the roofline (what students on other GPUs are graded by)."""
    out = tmp_path_factory.mktemp("uncalibrated") / "course"
    shutil.copytree(bundle, out, ignore=shutil.ignore_patterns("__pycache__"))
    for f in (out / "calibration").glob("*.toml"):
        f.unlink()
    return out


@pytest.mark.parametrize("name", ROOFLINE_END_TO_END)
def test_reference_scores_at_least_90_on_the_roofline_basis(uncalibrated: Path, name: str, tmp_path: Path) -> None:
    r = grade_in_bundle(uncalibrated, name, ROOT / "solutions" / name, tmp_path)
    print(f"ROOFLINE {name}: {r['score']['total']:.1f} basis {r['score'].get('basis')} "
          f"ratios {[b.get('ratio') for b in r.get('benchmarks', [])]} flags {r.get('flags')}")
    assert r["status"] == "graded" and r["score"].get("basis") == "roofline", summary(r)
    assert r["score"]["total"] >= 90, summary(r)


def test_naive_fixture_stays_below_its_ladder_bound_on_the_roofline_basis(uncalibrated: Path, tmp_path: Path) -> None:
    assert_naive_below_its_ladder_bound(uncalibrated, tmp_path)
