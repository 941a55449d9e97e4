"""``grade EX --profile``: the submission's kernels for one benchmark shape under NVIDIA Nsight
Compute (``ncu``), read back as a few metrics per kernel with one sentence of reading each.

One responsibility: build the command, run it with a time limit, parse ncu's CSV, read it. What
runs under ncu is :mod:`grader.sanitize_run` with ``--profiled 1`` (one warm-up call of ``solve``,
then one call between ``cudaProfilerStart``/``Stop``, so only that call's kernels are profiled, not
CuPy's input generation; ncu runs with ``--profile-from-start off``). Submission code never runs
in this process.

Which metrics: the spec's ``[profile] metrics`` names groups of :data:`GROUPS` (a section of the
spec, not code per exercise); without it, :func:`default_groups` picks by the spec's ceiling.
The ncu metric names are those of Nsight Compute 2025.3 on sm_90 (checked on the H200 with
``benchmarks/ncu_probe.sh``, 2026-12-02: every name below was in its raw CSV); the stall reasons'
meanings follow the Nsight Compute Kernel Profiling Guide ("Warp Stall Reasons").

ncu's CSV (``--csv --page raw --print-units base``): a header row (``"ID","Process ID",...,
"Kernel Name",...,"Block Size","Grid Size",...`` then one column per metric), a row of units, then
one row per profiled launch; numbers carry thousands separators (``67,120,128``). Lines starting
with ``==`` are ncu's own messages (``==PROF==``, ``==ERROR==``, ``==WARNING==``).
"""
from __future__ import annotations

import csv
import io
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.sanitize import find_tool

STALL_REASONS = {   # ncu's stall reason: what the warp waits for (Kernel Profiling Guide, "Warp Stall Reasons")
    "long_scoreboard": "global or local memory (L1TEX) results",
    "short_scoreboard": "shared memory or special-function (MIO) results",
    "barrier": "the other warps of its block at __syncthreads",
    "membar": "a memory fence",
    "mio_throttle": "room in the shared-memory (MIO) instruction queue",
    "lg_throttle": "room in the global/local memory queue (many small accesses)",
    "math_pipe_throttle": "a busy math pipe (the kernel is compute bound there)",
    "tex_throttle": "room in the texture queue",
    "wait": "a fixed-latency dependency",
    "not_selected": "its turn: it was eligible but another warp issued (enough warps are resident)",
    "selected": "nothing: it issued",
    "no_instruction": "instructions (instruction cache miss or after a branch)",
    "dispatch_stall": "the dispatcher",
    "drain": "its memory writes to drain at exit",
    "imc_miss": "the constant cache",
    "branch_resolving": "a branch target to be computed",
    "sleeping": "nothing: it sleeps (nanosleep, or all threads blocked)",
    "misc": "something ncu does not break down",
}
STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
OCCUPANCY_LIMITS = {   # launch__occupancy_limit_*: blocks per SM each resource allows
    "registers": "registers per thread", "shared_mem": "shared memory per block", "warps": "the block size (warps per SM)",
    "blocks": "the blocks-per-SM limit", "barriers": "barriers per SM"}
TIME = "gpu__time_duration.sum"
GROUPS: dict[str, tuple[str, ...]] = {
    "dram": ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum", "dram__bytes_write.sum"),
    "compute": ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
    "occupancy": ("sm__warps_active.avg.pct_of_peak_sustained_active", "sm__maximum_warps_per_active_cycle_pct",
                  "launch__registers_per_thread", "launch__block_size", "launch__grid_size",
                  "launch__waves_per_multiprocessor", "launch__shared_mem_per_block_static",
                  "launch__shared_mem_per_block_dynamic",
                  *(f"launch__occupancy_limit_{k}" for k in OCCUPANCY_LIMITS)),
    "cache": ("l1tex__t_sector_hit_rate.pct", "lts__t_sector_hit_rate.pct"),
    "bank_conflicts": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                       "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
    "stalls": tuple(STALL.format(r) for r in STALL_REASONS),
    "tensor": ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",),
}
TOP_STALLS = 3
TIMEOUT_FACTOR, TIMEOUT_EXTRA_S = 20, 120.0   # ncu replays each kernel ~14 passes: case_s * 20 + compile_s + 120 s
OUTPUT_LIMIT_BYTES = 16 * 1024 * 1024

MISSING = ("ncu (Nsight Compute) not found (looked on PATH, in /usr/local/cuda/bin and $CUDA_HOME/bin); fix: install "
           "the CUDA toolkit's Nsight Compute (e.g. apt install cuda-nsight-compute-<version>) or put ncu's folder on PATH")
NO_COUNTERS = ("the driver does not let this user read the GPU's performance counters (ERR_NVGPUCTRPERM); fix: "
               "profile as root, or have an administrator load the driver with NVreg_RestrictProfilingToAdminUsers=0 "
               "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)")


def default_groups(ceiling: str) -> tuple[str, ...]:
    """The metric groups for a spec without ``[profile] metrics``: a memory-bound exercise (ceiling
    "memory") is read by its DRAM throughput, a compute-bound one by its SM throughput and shared
    memory, a tensor-core one (fp16, fp8) by its tensor pipe too."""
    if ceiling == "memory":
        return ("dram", "occupancy", "cache", "stalls")
    return ("compute", "dram", "occupancy", "bank_conflicts", "stalls") + (("tensor",) if ceiling in ("fp16", "fp8") else ())


def metrics_for(groups: tuple[str, ...]) -> tuple[str, ...]:
    """The ncu metric names of ``groups`` (the kernel time always first)."""
    return tuple(dict.fromkeys((TIME, *(m for g in groups for m in GROUPS[g]))))


# -- records ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KernelProfile:
    """One profiled launch: the kernel's name (without parameters), its block and grid as ncu
    prints them (``(256, 1, 1)``), every metric read (name -> value; base units: ns, bytes, %,
    blocks, registers/thread, cycles per issued instruction), and the readings (sentences)."""
    name: str
    block: str
    grid: str
    metrics: dict[str, float]
    readings: tuple[str, ...] = ()

    @property
    def time_ms(self) -> float | None:
        """ncu's kernel duration (gpu__time_duration), ms; None when it was not measured."""
        ns = self.metrics.get(TIME)
        return None if ns is None else ns / 1e6


@dataclass(frozen=True)
class ProfileReport:
    """The profile of one shape: ``status`` "ok", "failed" (the run could not profile; ``message``
    says why) or "timeout"; ``kernels`` in launch order; ``ncu`` the tool's path."""
    shape: str
    token: str
    kernels: tuple[KernelProfile, ...]
    status: str = "ok"
    message: str = ""
    ncu: str = ""
    seconds: float = 0.0

    @property
    def time_ms(self) -> float | None:
        """Sum of the kernels' durations (one call of solve), ms."""
        times = [k.time_ms for k in self.kernels if k.time_ms is not None]
        return sum(times) if times else None


# -- parsing ---------------------------------------------------------------------------------------
def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def parse_csv(text: str) -> list[KernelProfile]:
    """The launches in ncu's raw CSV (see the module docstring); the readings are left empty."""
    rows = list(csv.reader(io.StringIO("\n".join(ln for ln in text.splitlines() if ln and not ln.startswith("==")))))
    start = next((i for i, r in enumerate(rows) if r[:1] == ["ID"]), None)
    if start is None:
        return []
    header = rows[start]
    col = {h: i for i, h in enumerate(header)}
    out = []
    for row in rows[start + 2:]:   # after the units row
        if len(row) != len(header):
            continue
        metrics = {h: v for h, i in col.items() if "__" in h and (v := _number(row[i])) is not None}
        name = row[col["Kernel Name"]] if "Kernel Name" in col else "?"
        out.append(KernelProfile(name.split("(")[0], row[col.get("Block Size", 0)], row[col.get("Grid Size", 0)], metrics))
    return out


def ncu_problem(log: str) -> str:
    """The first thing ncu itself reported as an error in ``log`` (one line), or ""."""
    if "ERR_NVGPUCTRPERM" in log:
        return NO_COUNTERS
    errors = [ln.removeprefix("==ERROR==").strip() for ln in log.splitlines() if ln.startswith("==ERROR==")]
    return errors[0] if errors else ""


# -- reading ---------------------------------------------------------------------------------------
def read(k: KernelProfile, groups: tuple[str, ...]) -> tuple[str, ...]:
    """One sentence per group that ncu measured for ``k``: what the numbers say, for a student."""
    m, out = k.metrics, []
    if "dram" in groups and (pct := m.get(GROUPS["dram"][0])) is not None:
        moved = (m.get("dram__bytes_read.sum", 0) + m.get("dram__bytes_write.sum", 0)) / 1e6
        verdict = ("near the memory roofline: the accesses are already efficient" if pct >= 70 else
                   "well below peak: too few loads in flight (too few warps or blocks, or no vector loads) "
                   "or uncoalesced accesses" if pct < 40 else "some headroom left")
        out.append(f"DRAM throughput {pct:.1f} % of peak ({moved:.1f} MB moved): {verdict}.")
    if "compute" in groups and (pct := m.get(GROUPS["compute"][0])) is not None:
        out.append(f"SM throughput {pct:.1f} % of peak (the busiest of the SM's pipes and units).")
    if "occupancy" in groups and (achieved := m.get(GROUPS["occupancy"][0])) is not None:
        limits = {k2: m[f"launch__occupancy_limit_{k2}"] for k2 in OCCUPANCY_LIMITS if f"launch__occupancy_limit_{k2}" in m}
        text = f"Achieved occupancy {achieved:.1f} % of the SM's warp slots"
        theory = m.get("sm__maximum_warps_per_active_cycle_pct")
        if theory is not None:
            text += f" (at most {theory:.0f} %"
            if limits and theory < 100:
                lim = min(limits, key=lambda k2: limits[k2])
                text += f", limited by {OCCUPANCY_LIMITS[lim]}: {limits[lim]:.0f} blocks per SM"
                if lim == "registers" and "launch__registers_per_thread" in m:
                    text += f" at {m['launch__registers_per_thread']:.0f} registers per thread"
            text += ")"
        waves = m.get("launch__waves_per_multiprocessor")
        if waves is not None and waves < 1:
            text += (f"; the grid of {m.get('launch__grid_size', 0):.0f} blocks fills only {waves:.2f} of one wave, "
                     f"so most SMs sit idle: launch more blocks")
        out.append(text + ".")
    if "cache" in groups and GROUPS["cache"][1] in m:
        out.append(f"Cache hit rates: L1 {m.get(GROUPS['cache'][0], 0):.1f} %, L2 {m[GROUPS['cache'][1]]:.1f} %.")
    if "bank_conflicts" in groups and GROUPS["bank_conflicts"][0] in m:
        ld, st = (m.get(x, 0) for x in GROUPS["bank_conflicts"])
        out.append(f"Shared-memory bank conflicts: {ld:,.0f} on loads, {st:,.0f} on stores" +
                   (": none." if ld + st == 0 else ": threads of a warp hit one bank at different addresses; "
                    "padding the shared array (e.g. [32][33]) or a swizzled layout removes them."))
    if "stalls" in groups:
        stalls = {r: m[STALL.format(r)] for r in STALL_REASONS if r != "selected" and STALL.format(r) in m}
        total = sum(stalls.values())
        if total > 0:
            top = sorted(stalls.items(), key=lambda kv: -kv[1])[:TOP_STALLS]
            out.append("Warps wait most for " + "; ".join(
                f"{STALL_REASONS[r]} ({r}, {100 * v / total:.0f} %)" for r, v in top if v > 0) + ".")
    if "tensor" in groups and (pct := m.get(GROUPS["tensor"][0])) is not None:
        out.append(f"Tensor pipe busy {pct:.1f} % of its peak" +
                   (": the tensor cores wait for data (stage tiles in shared memory, deeper pipelining)." if pct < 50
                    else "."))
    return tuple(out)


# -- running ---------------------------------------------------------------------------------------
def find_ncu(env: dict[str, str] | None = None) -> str | None:
    """ncu's path: on PATH, then in /usr/local/cuda/bin, then in $CUDA_HOME/bin."""
    return find_tool("ncu", env)


def timeout_for(case_s: float, compile_s: float) -> float:
    """Seconds the profiling run may take."""
    return compile_s + TIMEOUT_FACTOR * case_s + TIMEOUT_EXTRA_S


def command(ncu: str, metrics: tuple[str, ...], log_file: Path, spec_path: Path, submission: Path, token: str,
            status_file: Path, python: str) -> list[str]:
    """The ncu command line: only the launches between cudaProfilerStart and Stop (one call of solve),
    in every process the runner starts, metric values in base units."""
    return [ncu, "--csv", "--page", "raw", "--print-units", "base", "--profile-from-start", "off",
            "--target-processes", "all", "--metrics", ",".join(metrics), "--log-file", str(log_file),
            python, "-P", "-m", "grader.sanitize_run", str(spec_path), str(submission), token,
            "--status", str(status_file), "--profiled", "1"]


def profile(ncu: str, spec: Any, submission: Path, shape: str, token: str, timeout_s: float,
            python: str | None = None) -> ProfileReport:
    """Profile one call of ``solve`` on the case ``token`` (a benchmark shape) and read it.
    Never raises for the submission's or the tool's problems: they are the report's ``message``."""
    import sys

    from grader.sanitize import read_back, run_limited, work_folder
    groups = spec.profile_metrics or default_groups(spec.ceiling)
    with tempfile.TemporaryDirectory(prefix="grade-profile-") as tmp, work_folder(tmp) as folder:
        work = Path(tmp)
        log, status, out = work / "ncu.csv", work / "status.json", work / "output.txt"
        cwd = work / "cwd"
        cwd.mkdir()
        cmd = command(ncu, metrics_for(groups), log, Path(spec.path).resolve(), Path(submission).resolve(), token,
                      status, python or sys.executable)
        timed_out, seconds = run_limited(cmd, cwd, out, timeout_s)
        text = read_back(folder, log.name)      # through the folder's descriptor, never a link (see read_back)
        output = read_back(folder, out.name)
        try:
            run = json.loads(read_back(folder, status.name))
        except ValueError:
            run = {}
        if not isinstance(run, dict):
            run = {}
    base = dict(shape=shape, token=token, ncu=ncu, seconds=seconds)
    if timed_out:
        return ProfileReport(kernels=(), status="timeout", message=f"ncu did not finish within {timeout_s:g} s", **base)
    problem = ncu_problem(text) or ncu_problem(output)
    if not run.get("ok"):
        why = run.get("message") or problem or (output.strip().splitlines() or ["no output"])[-1]
        return ProfileReport(kernels=(), status="failed", message=f"the run under ncu stopped at {run.get('stage', 'start')}: {why}",
                             **base)
    kernels = tuple(KernelProfile(k.name, k.block, k.grid, k.metrics, read(k, groups)) for k in parse_csv(text))
    if not kernels:
        return ProfileReport(kernels=(), status="failed", message=problem or "ncu profiled no kernel: solve launched none "
                             "between cudaProfilerStart and cudaProfilerStop", **base)
    return ProfileReport(kernels=kernels, message=problem, **base)


def agreement(report: ProfileReport, grader_ms: float | None) -> str:
    """One sentence comparing ncu's kernel time with the grader's time per call for the shape."""
    if report.time_ms is None or not grader_ms:
        return ""
    return (f"ncu: {report.time_ms:.4f} ms of kernels in one call; the grader timed {grader_ms:.4f} ms per call "
            f"(CUDA events around solve after an L2 flush, launch gaps included): ncu/grader = "
            f"{report.time_ms / grader_ms:.2f}.")


def to_dict(report: ProfileReport) -> dict[str, Any]:
    """JSON-ready form of a report."""
    return {"shape": report.shape, "case": report.token, "status": report.status, "message": report.message,
            "ncu": report.ncu, "seconds": round(report.seconds, 3), "time_ms": report.time_ms,
            "kernels": [{"name": k.name, "block": k.block, "grid": k.grid, "time_ms": k.time_ms,
                         "metrics": k.metrics, "readings": list(k.readings)} for k in report.kernels]}

