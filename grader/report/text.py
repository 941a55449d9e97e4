"""The terminal report (rich): compile, correctness, performance, score, flags, what to try next;
and a progress display for the long phases."""
from __future__ import annotations

import math
import re
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from grader.grade import GradeResult, Progress
from grader.spec import dims_label
from grader.sandbox.supervisor import KIND_TEXT

MAX_LISTED_FAILURES = 5


class TerminalProgress(Progress):
    """A transient progress bar on stderr for compile, correctness and timing phases."""

    def __init__(self, console: Console):
        self.console = console
        self.bar: RichProgress | None = None
        self.task: Any = None

    def phase(self, name: str, total: int | None = None) -> None:
        if self.bar is None:
            self.bar = RichProgress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                    MofNCompleteColumn(), TextColumn("{task.fields[status]}"), TimeElapsedColumn(),
                                    console=self.console, transient=True)
            self.bar.start()
        if self.task is not None:
            self.bar.update(self.task, visible=False)
        self.task = self.bar.add_task(name, total=total, status="")

    def advance(self, text: str = "") -> None:
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, advance=1, status=text)

    def done(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _ms(x: float | None) -> str:
    return f"{x:.4f}" if x is not None else "-"


def hints(r: GradeResult) -> list[str]:
    """What to try next, from what went wrong."""
    out = []
    f = r.smallest_failure
    if f is not None:
        text = " ".join((f.message, *f.details))
        if "never written" in text:
            out.append("Some outputs were never written: check that your grid covers every element "
                       "(round the block count up) and that no thread returns early by mistake.")
        if "wrote outside" in text:
            out.append("Your kernel wrote past an array's end: guard each store with a bounds check (i < n).")
        if "pattern: every element with" in text and ">=" in text:
            out.append("Everything past some index is wrong: look at how many blocks you launch and at loop bounds.")
        if f.status in ("timeout",):
            out.append("A call never finished: look for a loop whose condition never changes or a __syncthreads() "
                       "that not every thread of the block reaches.")
        if f.status in ("illegal_address",):
            out.append("An illegal address usually means an index past the end of an array; re-run the shown case "
                       "with `--case` after adding bounds checks.")
        if re.search(r"; \d+ NaN|got -?inf", text):
            out.append("NaN or inf in the output: for large inputs subtract the maximum before exp(), and avoid 0/0.")
    for b in r.benchmarks:
        if b.ceiling_fraction is not None and b.ceiling_fraction < 0.5 and r.correct:
            # below the ridge point (arithmetic intensity under compute rate / bandwidth): memory-bound.
            # The rate is the matrix-product rate of this exercise (fp32, fp16 or fp8: only the one
            # its spec scores against, and fp16 under fp8, are there); with none, it is memory-bound.
            c = r.ceilings
            rate = max((x for x in (c.fp32_tflops, c.fp16_tflops, c.fp8_tflops) if x), default=None) if c else None
            ridge = rate * 1e3 / c.copy_gbps if rate and c.copy_gbps else math.inf
            if not b.flops or not b.bytes or b.flops / b.bytes < ridge:
                advice = "use 16-byte loads (float4), coalesced across the warp, and enough blocks to fill all SMs"
            else:
                advice = "reuse each loaded element more (tiles in shared memory and registers, see the README's ladder)"
            out.append(f"{b.name}: {b.ceiling_fraction:.0%} of the roofline (the time the measured bandwidth and "
                       f"compute rate allow): {advice}.")
            break
    for k in r.kernels:
        if k.get("local_bytes", 0) > 0:
            out.append(f"Kernel {k['name']} uses {k['local_bytes']} bytes of local memory per thread (spills or a "
                       "runtime-indexed array): index register arrays only with compile-time constants.")
    return out


def render(r: GradeResult, console: Console) -> None:
    """Print the whole report, every string of it made printable (see :mod:`grader.report.clean`)."""
    from grader.report.clean import clean
    r = clean(r)
    dev = f"{r.device.name} ({r.device.arch})" if r.device else "no GPU (host backend)"
    console.rule(f"[bold]{r.exercise}[/]: {escape(r.title)}")
    console.print(f"submission [cyan]{escape(r.submission)}[/] on {dev}; profile {r.profile}, seed {r.seed}"
                  + (" (mixed with the grading secret)" if r.secret_used else ""))
    if r.isolation:
        console.print(f"isolation: {escape(r.isolation)}", highlight=False)
    if not r.graded:
        console.print(f"\n[bold red]Not graded[/] ({KIND_TEXT.get(r.reason_kind, r.reason_kind)}):")
        console.print(r.reason, markup=False, highlight=False)
        _score(r, console)
        return
    if r.kernels:
        t = Table(title="kernels", title_justify="left", show_edge=False)
        for col in ("kernel", "registers", "shared B", "local B", "max threads"):
            t.add_column(col, justify="right" if col != "kernel" else "left", overflow="fold")
        for k in r.kernels:
            t.add_row(escape(str(k["name"])), str(k["registers"]), str(k["shared_bytes"]), str(k["local_bytes"]), str(k["max_threads"]))
        console.print(t)
    passed = sum(c.passed for c in r.cases)
    edges = [c for c in r.cases if c.origin == "edge"]
    color = "green" if passed == len(r.cases) else "red"
    console.print(f"\n[bold]Correctness[/]: [{color}]{passed} of {len(r.cases)} cases passed[/] "
                  f"({sum(c.passed for c in edges)}/{len(edges)} edge cases, "
                  f"{sum(c.passed for c in r.cases if c.origin != 'edge')}/{len(r.cases) - len(edges)} generated)")
    if r.hidden_cases and r.profile != "grading":
        console.print(f"  {r.hidden_cases} hidden edge case(s) and {r.hidden_benchmarks} hidden benchmark shape(s) "
                      "run only when grading.")
    failures = [c for c in r.cases if not c.passed]
    if r.smallest_failure is not None:
        f = r.smallest_failure
        console.print(f"\n[bold red]Smallest failing case[/]: {escape(f.description)} "
                      f"{escape('[' + KIND_TEXT.get(f.status, f.status) + ']')}")
        console.print(f"  {f.message}", markup=False, highlight=False)
        for d in f.details[:3]:
            console.print(f"  {d}", markup=False, highlight=False)
        if r.repro:
            console.print(f"  reproduce: [cyan]{escape(r.repro)}[/]", highlight=False, soft_wrap=True)
        others = [c for c in failures if c is not f]
        for c in others[:MAX_LISTED_FAILURES]:
            console.print(f"  also failing: {c.description}: {c.message[:160]}", markup=False, highlight=False)
        if len(others) > MAX_LISTED_FAILURES:
            console.print(f"  ... and {len(others) - MAX_LISTED_FAILURES} more")
    if r.benchmarks:
        t = Table(title="\nPerformance", title_justify="left", show_edge=False)
        for col in ("shape", "median ms", "IQR ms", "GB/s", "TFLOP/s", "% roofline", "reference ms", "ratio"):
            t.add_column(col, justify="left" if col == "shape" else "right", overflow="fold")
        for b in r.benchmarks:
            s = b.submission
            ref_ms = b.reference_ms
            t.add_row(f"{b.name} ({dims_label(b.dims)})", _ms(s.stats.median_ms if s.stats else None),
                      _ms(s.stats.iqr_ms if s.stats else None), f"{b.gbps:,.0f}" if b.gbps else "-",
                      f"{b.tflops:,.2f}" if b.tflops else "-",
                      f"{b.ceiling_fraction:.0%}" if b.ceiling_fraction is not None else "-",
                      _ms(ref_ms), f"{b.ratio:.2f}" if b.ratio else "-")
            if s.failure:
                t.add_row(f"  [red]{escape(s.failure[:200])}[/]", "", "", "", "", "", "", "")
        console.print(t)
    _score(r, console)
    for flag in r.flags:
        console.print(f"[bold yellow]review:[/] {escape(flag)}", highlight=False)
    tips = hints(r)
    if tips:
        console.print("\n[bold]What to try next[/]")
        for tip in tips:
            console.print(f"  - {tip}", highlight=False)
    if r.kernel_profile is not None:
        _kernel_profile(r.kernel_profile, console)


def _kernel_profile(p: dict, console: Console) -> None:
    """grade --profile's section: each kernel of one call with ncu's readings."""
    console.print(f"\n[bold]Nsight Compute[/] on {escape(p['shape'])} (case {escape(p.get('case', ''))})", highlight=False)
    if p["status"] != "ok":
        console.print(f"  [yellow]{escape(p['status'])}[/]: {escape(p['message'])}", highlight=False)
        return
    for k in p["kernels"]:
        t = f"{k['time_ms']:.4f} ms" if k.get("time_ms") is not None else "time not measured"
        console.print(f"  [cyan]{escape(k['name'])}[/]  block {k['block']}, grid {k['grid']}, {t}", highlight=False)
        for line in k["readings"]:
            console.print(f"    - {escape(line)}", highlight=False)
    if p.get("agreement"):
        console.print(f"  {escape(p['agreement'])}", highlight=False)
    if p.get("message"):
        console.print(f"  [yellow]ncu said[/]: {escape(p['message'])}", highlight=False)


def _score(r: GradeResult, console: Console) -> None:
    sc = r.score
    console.print(f"\n[bold]Score: {sc.total:g} / {sc.maximum:g}[/]  (correctness {sc.correctness:g}/{sc.correctness_max:g}, "
                  f"performance {sc.performance:g}/{sc.performance_max:g})"
                  + (f"  [bold yellow]{sc.withheld:g} withheld pending review[/]" if sc.withheld else ""),
                  highlight=False)
    if sc.basis:
        per = ", ".join(f"{s.name} {s.value:.2f}" for s in sc.shapes)
        console.print(f"  performance from the {sc.basis} basis: {per}; clamped geometric mean {sc.aggregate:.3f}",
                      highlight=False)
    if sc.note:
        console.print(f"  {sc.note}", markup=False, highlight=False)
