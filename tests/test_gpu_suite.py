"""benchmarks/gpu_suite.py's plan, checked without a GPU: every GPU test runs in exactly one phase,
and a test judged by its timing never shares the GPU."""
from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def suite():
    spec = importlib.util.spec_from_file_location("gpu_suite", ROOT / "benchmarks" / "gpu_suite.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def collected(suite) -> list[str]:
    return suite.collect()


def test_every_gpu_test_is_in_exactly_one_phase_and_none_unclassified(suite, collected) -> None:
    phases = suite.plan(collected)
    placed = [n for nodes in phases.values() for n in nodes]
    assert sorted(placed) == sorted(collected)
    assert len(set(collected)) == len(collected) > 100
    assert phases["serial"] == [], "classify these in benchmarks/gpu_suite.py: " + ", ".join(phases["serial"])


def test_timed_outcomes_never_share_the_gpu(suite, collected) -> None:
    shared = set(suite.plan(collected)["shared"])
    for toml in (ROOT / "tests" / "cheats").glob("*/*/cheat.toml"):
        meta = tomllib.loads(toml.read_text())
        node = f"tests/test_cheats.py::test_cuda_cheat_is_caught[{toml.parent.parent.name}/{toml.parent.name}]"
        if meta.get("backend") == "cuda":
            assert (node in shared) == (meta.get("expect") not in suite.TIMED_EXPECTATIONS), node
    timed_functions = ("test_solution_gets_full_marks", "test_reference_scores_full_marks_on_the_calibration_basis",
                       "test_same_score_five_times", "test_naive_kernel_is_correct_and_scores_fewer_performance_points")
    assert not [n for n in shared if any(f in n for f in timed_functions)]


def test_the_named_tests_exist(suite, collected) -> None:
    functions = {n.split("::")[-1].split("[")[0] for n in collected}
    assert suite.SHARED_TESTS <= functions and suite.LADDER_TESTS <= functions
    assert set(suite.GATE) <= set(collected)


def test_a_keyword_narrows_the_collection(suite) -> None:
    nodes = suite.collect("hang_is_killed")
    assert nodes == ["tests/test_gpu.py::test_hang_is_killed_and_named"]
    assert suite.plan(nodes)["shared"] == nodes


def test_a_test_cut_off_by_the_limit_is_named(suite, tmp_path) -> None:
    """A hang in a phase showed as "failed 0" before (the eighth session's shared phase sat 400 s)."""
    group = ["tests/a.py::test_one", "tests/a.py::test_two[x]", "tests/b.py::test_three"]
    log = tmp_path / "shared-0.txt"
    log.write_text("tests/a.py::test_one PASSED        [ 33%]\ntests/a.py::test_two[x] \n!!! KeyboardInterrupt !!!\n")
    assert suite.unfinished(group, log) == [
        "not finished: tests/a.py::test_two[x] (running when the limit stopped it; 1 more not started)"]
    log.write_text("".join(f"{n} {o}  [ 50%]\n" for n, o in zip(group, ("PASSED", "FAILED", "SKIPPED"))))
    assert suite.unfinished(group, log) == []
    assert suite.unfinished(group, tmp_path / "missing.txt")[0].startswith("not finished: tests/a.py::test_one")


def test_a_failure_the_limit_caused_is_named_as_cut(suite, tmp_path) -> None:
    """The twenty-eighth session: the limit's SIGINT reached a CliRunner test, which click turned
    into "Aborted!" and a FAILED line; the table called it a failure of the profiler."""
    progress = ("tests/a.py::test_one FAILED  [ 33%]\ntests/a.py::test_two[x] PASSED  [ 66%]\n"
                "tests/b.py::test_three[p] FAILED  [100%]\n\n===== FAILURES =====\n")
    sections = ("____ test_one ____\nE   assert 1 == 2\n____ test_three[p] ____\n{}\n"
                "===== PASSES =====\n")
    failed = ["FAILED tests/a.py::test_one - assert 1 == 2", "FAILED tests/b.py::test_three[p] - AssertionError: "]
    log = tmp_path / "ladder.txt"
    log.write_text(progress + sections.format("E   AssertionError: \nE     Aborted!"))
    assert suite.cut_by_limit(failed, log, 1) == failed          # pytest ended on its own: both are failures
    cut = suite.cut_by_limit(failed, log, 124)                   # timeout(1) stopped it in test_three
    assert cut[0] == failed[0]
    assert cut[1].startswith("not finished: tests/b.py::test_three[p] (the limit's SIGINT stopped it")
    log.write_text(progress + sections.format("E   assert 0.5 < 0.3"))   # a failure of its own, then the limit
    assert suite.cut_by_limit(failed, log, 124) == failed
    log.write_text("tests/a.py::test_one FAILED  [ 50%]\ntests/b.py::test_three[p] PASSED  [100%]\n")
    assert suite.cut_by_limit(failed[:1], log, 124) == failed[:1]   # the last one passed: nothing to relabel
