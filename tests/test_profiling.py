"""grade --profile (grader.profiling) without a GPU: ncu's real CSV (recorded on the H200 with
benchmarks/ncu_probe.sh, Nsight Compute 2025.3.1, 2026-12-02) parsed and read, the run's plumbing
through a stand-in for ncu, the spec section and the command line's refusals."""
from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader import cli, profiling
from grader.sanitize import CUDA_BIN
from grader.spec import SpecError, load_spec
from tests.conftest import FIXTURES, ROOT

NCU = FIXTURES / "ncu"


def kernels(name: str, groups=None):
    found = profiling.parse_csv((NCU / f"{name}.csv").read_text())
    groups = groups or profiling.default_groups("memory")
    return [profiling.KernelProfile(k.name, k.block, k.grid, k.metrics, profiling.read(k, groups)) for k in found]


def test_ncu_raw_csv_is_parsed_with_its_thousands_separators():
    (k,) = kernels("ex07_solution")
    assert k.name == "softmax_block_v4_n4" and k.block == "(256, 1, 1)" and k.grid == "(4096, 1, 1)"
    assert k.time_ms == pytest.approx(0.03152)
    assert k.metrics["dram__bytes_read.sum"] == 67_120_128
    assert k.metrics["dram__throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(71.17)
    assert all(m in k.metrics for m in profiling.metrics_for(profiling.default_groups("fp16")))


def test_the_naive_layernorm_reads_as_a_student_should_see_it():
    """ex08's naive fixture (one thread per row, 64 blocks) against the reference: the profile says
    why it is slow (DRAM far below peak, a fraction of a wave, memory stalls)."""
    (naive,) = kernels("ex08_naive")
    (ref,) = kernels("ex08_solution")
    text = " ".join(naive.readings)
    assert "DRAM throughput 6.7 % of peak" in text and "well below peak" in text
    assert "fills only 0.08 of one wave" in text and "launch more blocks" in text
    assert "Warps wait most for global or local memory (L1TEX) results (long_scoreboard" in text
    ref_text = " ".join(ref.readings)
    assert "DRAM throughput 81.7 % of peak" in ref_text and "near the memory roofline" in ref_text
    assert "of one wave" not in ref_text
    assert "limited by registers per thread: 5 blocks per SM at 46 registers per thread" in ref_text


def test_only_the_groups_asked_for_are_read():
    (k,) = kernels("ex08_solution", ("bank_conflicts",))
    assert len(k.readings) == 1 and k.readings[0].startswith("Shared-memory bank conflicts: 12,047 on loads")


def test_ncu_messages_and_a_csv_without_launches():
    assert profiling.parse_csv("==PROF== Connected to process 1\n==PROF== Disconnected from process 1\n") == []
    assert profiling.ncu_problem("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission") == profiling.NO_COUNTERS
    assert profiling.ncu_problem("==PROF== x\n==ERROR== Failed to find metric foo\n") == "Failed to find metric foo"
    assert profiling.ncu_problem("==PROF== fine\n") == ""


FAKE_NCU = """#!{python}
# a stand-in for ncu: writes {csv} (or the log given in $FAKE_NCU_LOG) where --log-file says and a
# status file for the run it was asked to start, without running it
import json, os, sys
args = sys.argv[1:]
log = args[args.index("--log-file") + 1]
status = args[args.index("--status") + 1]
assert args[args.index("--profiled") + 1] == "1" and "--profile-from-start" in args
open(log, "w").write(open(os.environ.get("FAKE_NCU_LOG", "{csv}")).read())
json.dump({{"ok": os.environ.get("FAKE_RUN_OK", "1") == "1", "stage": "done", "message": "boom"}}, open(status, "w"))
"""


@pytest.fixture
def fake_ncu(tmp_path):
    path = tmp_path / "ncu"
    path.write_text(FAKE_NCU.format(python=sys.executable, csv=NCU / "ex08_naive.csv"))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_a_profile_run_reads_what_ncu_wrote(fake_ncu, monkeypatch):
    spec = load_spec(ROOT / "exercises" / "ex08_layernorm" / "spec.toml")
    rep = profiling.profile(fake_ncu, spec, ROOT / "solutions" / "ex08_layernorm", "16384x4096", "t", 30)
    assert rep.status == "ok" and [k.name for k in rep.kernels] == ["layernorm_rows"]
    assert rep.time_ms == pytest.approx(3.382912)
    assert "DRAM throughput 6.7 %" in rep.kernels[0].readings[0]
    assert "ncu/grader = 0.85" in profiling.agreement(rep, 3.382912 / 0.85)
    data = profiling.to_dict(rep)
    assert json.loads(json.dumps(data))["kernels"][0]["readings"] == list(rep.kernels[0].readings)


def test_a_profile_run_says_why_it_could_not_profile(fake_ncu, monkeypatch, tmp_path):
    spec = load_spec(ROOT / "exercises" / "ex08_layernorm" / "spec.toml")
    sub = ROOT / "solutions" / "ex08_layernorm"
    monkeypatch.setenv("FAKE_RUN_OK", "0")
    rep = profiling.profile(fake_ncu, spec, sub, "s", "t", 30)
    assert rep.status == "failed" and rep.message == "the run under ncu stopped at done: boom"
    monkeypatch.setenv("FAKE_RUN_OK", "1")
    log = tmp_path / "denied.log"
    log.write_text("==PROF== Connected to process 5\n==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n")
    monkeypatch.setenv("FAKE_NCU_LOG", str(log))
    rep = profiling.profile(fake_ncu, spec, sub, "s", "t", 30)
    assert rep.status == "failed" and rep.message == profiling.NO_COUNTERS


def test_find_ncu_looks_in_cuda_home(tmp_path):
    (tmp_path / "bin").mkdir()
    tool = tmp_path / "bin" / "ncu"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert profiling.find_ncu({"PATH": "", "CUDA_HOME": str(tmp_path)}) == str(tool)
    assert profiling.find_ncu({"PATH": os.devnull}) in (None, str(CUDA_BIN / "ncu"))


def test_the_spec_section_names_known_groups(tmp_path):
    src = (ROOT / "exercises" / "ex03_transpose" / "spec.toml").read_text()
    assert load_spec(ROOT / "exercises" / "ex03_transpose" / "spec.toml").profile_metrics == (
        "dram", "occupancy", "bank_conflicts", "stalls")
    bad = tmp_path / "ex03_transpose"
    bad.mkdir()
    (bad / "spec.toml").write_text(src.replace('"stalls"]', '"stals"]'))
    with pytest.raises(SpecError, match=r"\[profile\].*'stals' is not a metric group.*did you mean 'stalls'"):
        load_spec(bad / "spec.toml")


@pytest.mark.parametrize("extra, words", [
    (["--sanitize"], "run one at a time"),
    (["--sanitize-tools", "memcheck"], "--profile and --sanitize (or --sanitize-tools)"),
    (["--backend", "host"], "drop --backend host"),
    (["--case", "n=1/a=0,b=0/seed=1"], "drop --case"),
    (["--format", "gradescope"], "--profile writes text, json or html"),
    (["--mode", "grading"], "outside the worker's sandbox"),
])
def test_profile_refuses_what_it_cannot_serve(extra, words):
    out = CliRunner().invoke(cli.main, ["ex01", "--root", str(ROOT), "--profile", *extra])
    assert out.exit_code == 2 and words in out.output, out.output


def test_an_unknown_profile_shape_is_named_before_any_gpu_is_needed():
    out = CliRunner().invoke(cli.main, ["ex07", "--root", str(ROOT), "--profile-shape", "huge"])
    assert out.exit_code == 2
    assert "'huge' is not a benchmark shape of ex07_softmax; choose from" in out.output


@pytest.mark.gpu
def test_grade_profile_shows_why_the_naive_layernorm_is_slow(tmp_path):
    """On the GPU (issue 16's done-means): `grade ex08 --profile` on the reference and on the naive
    fixture, whose profile shows what a student should see: DRAM far below peak, under a wave,
    memory stalls on top. Printed for the closing note."""
    if profiling.find_ncu() is None:
        pytest.skip("no ncu (Nsight Compute) on this machine")
    out = {}
    for name, folder in (("solution", ROOT / "solutions" / "ex08_layernorm"),
                         ("naive", FIXTURES / "gpu" / "ex08_layernorm_naive")):
        path = tmp_path / f"{name}.json"
        r = CliRunner().invoke(cli.main, ["ex08", "--root", str(ROOT), "--submission", str(folder), "--profile",
                                          "--format", "json", "-o", str(path)])
        assert path.is_file(), r.output
        out[name] = json.loads(path.read_text())["kernel_profile"]
        print(f"PROFILE {name}: {json.dumps(out[name])[:3000]}")
        assert out[name]["status"] == "ok", out[name]
    dram = {n: max(k["metrics"]["dram__throughput.avg.pct_of_peak_sustained_elapsed"] for k in p["kernels"])
            for n, p in out.items()}
    assert dram["naive"] < 30 < 60 < dram["solution"], dram
    naive = " ".join(x for k in out["naive"]["kernels"] for x in k["readings"])
    assert "well below peak" in naive and "of one wave" in naive and "long_scoreboard" in naive
    assert "ncu/grader =" in out["solution"]["agreement"]


def test_sanitize_is_refused_in_grading_mode_too():
    out = CliRunner().invoke(cli.main, ["ex01", "--root", str(ROOT), "--sanitize", "--mode", "grading"])
    assert out.exit_code == 2 and "--sanitize runs the submission under a tool" in out.output, out.output


def test_without_a_gpu_profile_says_so_and_names_a_missing_ncu(monkeypatch):
    from grader import device
    monkeypatch.setattr(device, "unavailable_reason", lambda: "no NVIDIA GPU (test)")
    monkeypatch.setattr(profiling, "find_ncu", lambda env=None: None)
    out = CliRunner().invoke(cli.main, ["ex01", "--root", str(ROOT), "--profile",
                                        "--submission", str(ROOT / "solutions" / "ex01_vector_add")])
    assert out.exit_code == cli.EXIT_ERROR
    assert "--profile runs kernels on a GPU; also ncu (Nsight Compute) not found" in out.output
