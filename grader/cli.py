"""The ``grade`` command line: the command group, ``grade list`` and the grade itself (``grade
EXERCISE``: parse and check the options, build the grading context, grade, write the report). The
instructors' commands are in grader.cli_instructor, ``grade batch`` in grader.cli_batch, what they
share in grader.cli_common."""
from __future__ import annotations

import os
import shlex
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NoReturn

import click
from rich.console import Console
from rich.markup import escape

from grader.cli_batch import batch_cmd
from grader.cli_common import (EXIT_BELOW, EXIT_CODES_HELP, EXIT_ERROR, EXIT_NOT_GRADED, EXIT_OK, FORMATS,  # noqa: F401
                               INSTRUCTOR_COMMANDS, MACHINE_KINDS, SECRET_ENV, allow_unisolated_option,
                               backend_option, case_limit_option, course_root, fail_under_option,
                               find_exercises, format_option, in_bundle, isolation_refusal, mode_option,
                               root_option, secret_refusal, stdout_console, tracer_refusal)
from grader.cli_instructor import calibrate_cmd, check_cmd, new_cmd, publish_cmd

class ExerciseGroup(click.Group):
    """``grade EXERCISE ...`` runs the grade command; other words are subcommands."""

    def resolve_command(self, ctx: click.Context, args: list[str]):  # type: ignore[override]
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            return "run", self.commands["run"], args
        return super().resolve_command(ctx, args)

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage("grade", "EXERCISE [OPTIONS] | COMMAND [ARGS]")

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """In a published student bundle, the help leaves out the instructors' commands."""
        if not in_bundle():
            return super().format_help_text(ctx, formatter)
        import inspect
        text = inspect.cleandoc(self.help or "").split("Instructors and CI:")[0].rstrip()
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(text)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if not in_bundle():
            return super().format_epilog(ctx, formatter)
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text("\n".join(ln for ln in (self.epilog or "").splitlines() if "grade check" not in ln))

    def list_commands(self, ctx: click.Context) -> list[str]:
        hidden = INSTRUCTOR_COMMANDS if in_bundle() else ()
        return [c for c in super().list_commands(ctx) if c not in hidden]


class RunCommand(click.Command):
    """The grade command: reached as ``grade EXERCISE`` (and ``grade run EXERCISE``), so its usage
    line shows the short form."""

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage("grade", "EXERCISE [OPTIONS]   (also: grade run EXERCISE [OPTIONS])")


@click.group(cls=ExerciseGroup, epilog=EXIT_CODES_HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gpu-kernel-grader", message="grade %(version)s")
def main() -> None:
    """Grade CUDA kernel exercises: correctness on hypothesis-generated shapes against a float64
    oracle, then timing against the reference solution (side by side where the course's solutions/
    folder is present; else against its times for this GPU in calibration/, or this GPU's roofline).

    \b
    Students:
      grade ex07                    grade student_template/ex07_softmax on this GPU
      grade ex07 --submission DIR   grade another folder (kernel.cu + solution.py)
      grade ex07 --compile-only     compile + static report (works without a GPU)
      grade ex07 --sanitize         the smallest failing case under compute-sanitizer
      grade ex07 --profile          where a correct kernel's time goes (Nsight Compute)
      grade list                    the exercises
      grade run --help              every option of a grade
    Instructors and CI:
      grade check                   every exercise ready? (specs, solutions, stubs, controls)
      grade calibrate               time the reference solutions for calibration/<arch>.toml
      grade publish OUT/            write the student bundle (no solutions) and check it
      grade new ex17_name           scaffold a new exercise
      grade batch SUBMISSIONS/      grade every student's folders
    """


# -- helpers ---------------------------------------------------------------------------------------
def _commands() -> tuple[str, ...]:
    """The subcommands `grade WORD` could have meant (those its help lists here; not run)."""
    ctx = click.Context(main)
    return tuple(c for c in main.list_commands(ctx) if c != "run")


def _writable(path: str | None, option: str) -> None:
    """Fail early (before any grading) when a result file could not be written: raises
    click.BadParameter naming ``option``. A file that did not exist is created and removed at once,
    so a grade killed before it writes its result leaves no empty file; an existing file is opened
    for appending and left as it was. The folders made for it stay: the worker's isolation hides a
    result folder only if it exists when the worker starts (one made later by the worker would
    hold a forged result: red-team pass 15)."""
    if not path:
        return
    p = Path(path)
    blocker = next((d for d in [p.parent, *p.parent.parents] if d.exists() and not d.is_dir()), None)
    if blocker is not None:   # mkdir would say only "File exists"
        raise click.BadParameter(f"cannot write {path}: {blocker} is a file, not a folder; fix: choose a "
                                 f"path under a folder", param_hint=option)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:   # someone's file (or a link to one): checked, never changed
            os.close(os.open(p, os.O_WRONLY | os.O_APPEND))
        else:
            os.close(fd)
            p.unlink()
    except OSError as exc:
        raise click.BadParameter(f"cannot write {path}: {exc.strerror or exc}", param_hint=option) from None


def _result_folders(*paths: str | None) -> tuple[Path, ...]:
    """The folders the result files go to, for the submission worker's hidden folders: a worker
    that can write there (it finds the paths in the grader's /proc/PID/cmdline) leaves a forged
    result (Gradescope's results.json with a full score) wherever the grader does not get to write
    its own (killed by that worker, which runs as the same user; an unwritable file it made).
    Hidden, the worker sees an empty tmpfs there. Left out: the filesystem root and the folders
    above the system's temporary folder, which the isolation itself uses (a result file there
    stays within the worker's reach)."""
    return tuple(dict.fromkeys(f for p in paths if p for f in _result_folder_pair(p) if _hideable(f)))


def _result_folder_pair(path: str) -> tuple[Path, Path]:
    """The folder a result path names (links in it resolved) and, when the path is itself a link,
    the folder its target lies in: the grader writes through the link, so both matter (a worker
    that can write in the first replaces the link; red-team pass 15)."""
    own = Path(path).parent.resolve()
    return own, Path(path).resolve().parent


# Folders the worker's processes need whole (programs, libraries, devices, the kernel's files): a
# result folder there cannot be hidden from the worker without breaking its start (red-team pass 15:
# `--output /usr/x.json` as root failed the isolation and blamed the student).
SYSTEM_FOLDERS = tuple(Path(p) for p in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
                                         "/proc", "/sys", "/run", "/dev", "/boot"))


def _hideable(folder: Path) -> bool:
    """Whether ``folder`` (resolved) can be hidden from a submission's worker: not the filesystem
    root, the system's temporary folder or a folder above it (the isolation stages its mounts
    there), nor a system folder (:data:`SYSTEM_FOLDERS`) or one inside it (the host backend's
    buffers live in /dev/shm)."""
    import tempfile
    tmp = Path(tempfile.gettempdir()).resolve()
    if folder == Path("/") or folder == tmp or folder in tmp.parents:
        return False
    return not any(folder == s or s in folder.parents for s in SYSTEM_FOLDERS)


def _result_paths_hideable(**options: str | None) -> None:
    """Grading mode: refuse (click.BadParameter naming the option) a result file whose folder cannot
    be hidden from the worker, which could leave a forged result there (see :func:`_result_folders`)."""
    for option, path in options.items():
        folder = next((f for f in _result_folder_pair(path) if not _hideable(f)), None) if path else None
        if folder is not None:
            raise click.BadParameter(
                f"{path}: in --mode grading a result file goes in a folder of its own (the submission's worker "
                f"could write in {folder}, which cannot be hidden from it); fix: e.g. "
                f"{folder / 'grade' / Path(path).name}", param_hint=f"--{option}")


class GradeTimeout(BaseException):
    """The whole grade ran past --time-limit. A BaseException, so that no ``except Exception`` on the
    way (device detection, hypothesis's runner, a cleanup) swallows it and lets the grade run on
    unbounded (red-team pass 16)."""


def _on_alarm(signum, frame):  # noqa: ANN001
    raise GradeTimeout()


# -- grade EXERCISE ----------------------------------------------------------------------------------
@main.command("list")
@root_option
def list_cmd(root: str | None) -> None:
    """List the exercises with their titles and points."""
    from rich.table import Table
    from grader.spec import SpecError, list_exercises, load_spec

    console = stdout_console()
    t = Table(show_edge=False)
    for col in ("exercise", "title", "points", "your folder"):
        t.add_column(col, overflow="fold")
    r = course_root(root)
    for ex in list_exercises(r):
        try:
            spec = load_spec(ex.spec_path)
            t.add_row(ex.name, spec.title, f"{spec.total_points:g}", str(ex.template.relative_to(r)))
        except SpecError as exc:
            t.add_row(ex.name, f"[red]invalid spec: {escape(str(exc))}[/]", "-", "-")
    console.print(t)


@dataclass(frozen=True)
class ReportSink:
    """Where one grade's report goes: the terminal in --format ``fmt``, ``output`` (--output: the
    report in ``fmt``, always written when given) and ``json_out`` (--json: the JSON report too);
    ``exercise`` and ``submission`` name what an error report is about."""
    fmt: str
    output: str | None
    json_out: str | None
    exercise: str
    submission: str

    def emit(self, render: Callable[[str], str], show: Callable[[], None] | None = None) -> None:
        """Write the report, ``render(format)`` giving it in one format. In text format ``show()``
        prints it on the terminal (None: nothing on stdout, as for an error, whose line went to
        stderr); in another format it goes to stdout unless --output is given."""
        from grader.report.formats import write
        if self.json_out:
            write(render("json"), Path(self.json_out))
        if self.fmt == "text":
            if self.output:
                write(render("text"), Path(self.output))
            if show is not None:
                show()
            return
        text = render(self.fmt)
        if self.output:
            write(text, Path(self.output))
        else:
            click.echo(text)

    def error(self, kind: str, message: str, code: int, max_score: float | None = None) -> NoReturn:
        """One line on stderr, the error report in every requested form, and exit ``code``."""
        from grader.report.clean import printable
        from grader.report.formats import render_error
        click.echo(f"grade: {printable(message)}", err=True)
        self.emit(lambda f: render_error(f, self.exercise, self.submission, kind, message, code, max_score))
        sys.exit(code)


@main.command("run", cls=RunCommand, epilog=EXIT_CODES_HELP)
@click.argument("exercise")
@click.option("--submission", "-s", type=click.Path(), help="Folder with kernel.cu and solution.py "
              "(default: student_template/<exercise> in the course folder).")
@format_option(help="Report format: text, json (schema grader/report/schema.json), gradescope (results.json), junit, "
              "html (one self-contained page with the roofline plot).")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the report here (always written, "
              "also when the submission crashes or the time limit hits).")
@click.option("--plot", "plot", type=click.Path(dir_okay=False), help="Also write the roofline plot of the timed "
              "shapes here (.png or .svg; needs matplotlib).")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), help="Also write the JSON result here.")
@mode_option("quick", help="quick: a fast student run; grading: more cases, hidden checks, seed mixed with $GRADER_SECRET.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for case generation and timing order.")
@click.option("--case", "case_token", help="Re-run one case, as printed in a failure's 'reproduce' line.")
@click.option("--no-timing", is_flag=True, help="Check correctness only.")
@click.option("--compile-only", is_flag=True, help="No GPU needed: compile kernel.cu with NVRTC (as grading does), "
              "check solution.py and the features, print registers/shared memory/spills per kernel. Not graded: "
              "nothing runs. Exit 4 when kernel.cu could not be compiled here.")
@click.option("--arch", default=None, help="Arch for --compile-only, e.g. sm_90 or sm_90a (default: this GPU's, "
              "else sm_90).")
@fail_under_option(help="Exit 1 when the score is below this many points.")
@click.option("--accept-implausible", is_flag=True, help="Instructors, after review: keep the performance points "
              "of a result flagged as physically implausible (above the measured ceiling or far faster than the "
              "reference); without it they are withheld.")
@click.option("--reference/--no-reference", default=True, show_default=True,
              help="Time the reference solution side by side when solutions/<exercise> exists.")
@click.option("--reference-times", type=click.Path(dir_okay=False, exists=True),
              help="Reference times in the calibration format, used instead of calibration/<arch>.toml.")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds for the whole grade (default: the spec's [limits] total_s).")
@case_limit_option
@click.option("--sanitize", is_flag=True, help="Re-run the smallest failing case (or --case TOKEN; without a "
              "failure, the largest edge case within a size cap) under NVIDIA compute-sanitizer with memcheck, racecheck, initcheck and "
              "synccheck, kernel.cu compiled with -lineinfo, and report each tool's first errors as kernel.cu:LINE. "
              "Exit 1 when a tool reports an error. Needs compute-sanitizer (CUDA toolkit) and a GPU.")
@click.option("--sanitize-tools", "sanitize_tools", default=None, metavar="TOOL,...",
              help="With --sanitize: the tools to run, in order (default: memcheck,racecheck,initcheck,synccheck); "
              "implies --sanitize.")
@click.option("--profile", "profile_kernels", is_flag=True, help="After a correct grade, run the submission's kernels "
              "for one benchmark shape under NVIDIA Nsight Compute (ncu) and report, per kernel, the metrics the spec's "
              "[profile] section names (DRAM throughput, occupancy and its limit, cache hit rates, bank conflicts, warp "
              "stalls, tensor pipe) with a sentence on each. Needs ncu (CUDA toolkit), a GPU and access to its counters.")
@click.option("--profile-shape", "profile_shape", default=None, metavar="NAME",
              help="With --profile: the benchmark shape to profile, by its name in the spec's [[benchmark]] list "
              "(as the report's timing table shows it; quote names with spaces or ^); default: the first; implies "
              "--profile.")
@click.option("--hide", "hide", multiple=True, type=click.Path(file_okay=False), help="Another folder the "
              "submission's worker must not see (repeatable; `grade batch` hides every student's submissions and "
              "its --out folder).")
@allow_unisolated_option(help="Grade in --mode grading even where the submission's "
              "worker cannot be isolated from the course files (no user namespaces) or its kernels cannot be traced "
              "(no CUPTI); the report says so.")
@root_option
@backend_option
def run_cmd(exercise: str, submission: str | None, fmt: str, output: str | None, json_out: str | None, mode: str,
            seed: int, case_token: str | None, no_timing: bool, compile_only: bool, arch: str | None,
            fail_under: float | None, accept_implausible: bool, reference: bool, reference_times: str | None,
            time_limit: float | None, case_limit: float | None, sanitize: bool, sanitize_tools: str | None,
            hide: tuple[str, ...], allow_unisolated: bool, root: str | None, backend: str,
            plot: str | None = None, profile_kernels: bool = False, profile_shape: str | None = None) -> None:
    """Grade one exercise: EXERCISE is 7, ex07 or ex07_softmax."""
    from grader.spec import SpecError, load_spec

    if plot is not None and Path(plot).suffix.lower() not in (".png", ".svg"):
        raise click.BadParameter(f"{plot}: the plot is written as .png or .svg; fix: name the file *.png or *.svg",
                                 param_hint="--plot")
    _writable(plot, "--plot")
    if plot is not None and compile_only:
        raise click.UsageError("--plot draws the roofline of the timed shapes and --compile-only times nothing: "
                               "drop one of them")
    if output and json_out and Path(output).resolve() == Path(json_out).resolve():
        raise click.BadParameter(f"{json_out} is the --output file too; fix: give --json another path (with "
                                 f"--format json, --output alone writes the JSON)", param_hint="--json")
    tools: tuple[str, ...] = ()
    if sanitize or sanitize_tools is not None:
        tools = _sanitize_options(sanitize_tools, compile_only, backend, fmt)
    profile_kernels = profile_kernels or profile_shape is not None
    if profile_kernels:
        _profile_options(bool(tools), compile_only, case_token, backend, fmt)
    if (tools or profile_kernels) and mode == "grading" and not allow_unisolated:
        what = "--sanitize" if tools else "--profile"
        raise click.UsageError(f"{what} runs the submission under a tool, outside the worker's sandbox (no mount "
                               f"isolation from the course files, no kernel trace): not in --mode grading; run it "
                               f"in --mode quick, or pass --allow-unisolated")

    if arch is not None:
        from grader.static import arch_problem
        why = arch_problem(arch)
        if why:
            raise click.BadParameter(why, param_hint="--arch")
    r = course_root(root)
    ex = find_exercises(r, [exercise], _commands())[0]
    if submission is not None and not submission.strip():
        raise click.BadParameter("is empty; give a folder with kernel.cu and solution.py", param_hint="--submission")
    sub = Path(submission) if submission else ex.template
    sink = ReportSink(fmt, output, json_out, ex.name, str(sub))
    _writable(output, "--output")
    _writable(json_out, "--json")
    if mode == "grading":
        _result_paths_hideable(output=output, json=json_out, plot=plot)
    try:
        spec = load_spec(ex.spec_path)
    except SpecError as exc:
        sink.error("spec", str(exc), EXIT_ERROR)
    if case_token:
        from grader.cases import parse_token
        try:
            parse_token(spec, case_token)
        except ValueError as exc:
            raise click.BadParameter(str(exc).removeprefix("--case "), param_hint="--case") from None
    if compile_only:
        sys.exit(_compile_only(spec, sub, arch, sink))
    shape = _profile_shape(spec, profile_shape, mode) if profile_kernels else None
    if mode == "grading" and not allow_unisolated:
        why_not = isolation_refusal()
        if why_not is not None:
            sink.error("no_isolation", why_not, EXIT_ERROR,
                        spec.total_points)
    if mode == "grading" and secret_refusal() is not None:
        sink.error("no_secret", secret_refusal(), EXIT_ERROR,
                    spec.total_points)
    from grader import device as dev
    from grader.cases import PROFILES
    from grader.context import GradingContext
    from grader.grade import GradeOptions
    from grader.report.text import TerminalProgress
    from grader.sandbox.buffers import DeviceMemoryError
    from grader.static import static_check

    limit = time_limit or spec.limits.total_s
    progress = TerminalProgress(Console(stderr=True))
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)   # from the static checks on: nothing of a grade outlives it
    try:
        problem = static_check(spec, sub)
        if problem:  # before looking for a GPU: a missing or forbidden submission is the user's to fix
            sink.error(problem[0], problem[1], EXIT_NOT_GRADED,
                        spec.total_points)
        if case_limit:
            from dataclasses import replace
            spec = replace(spec, limits=replace(spec.limits, case_s=case_limit))
        if backend in ("auto", "cuda"):
            why = dev.unavailable_reason()
            if why is not None:
                _no_gpu(spec, ex.name, sub, submission is not None, arch, why, bool(tools), sink,
                        profile_kernels)
        sanitizer = None
        if tools:  # before grading: without the tool nothing here can help
            from grader.sanitize import MISSING, find_sanitizer
            sanitizer = find_sanitizer()
            if sanitizer is None:
                sink.error("no_sanitizer", MISSING, EXIT_ERROR)

        ncu = None
        if profile_kernels:  # before grading, as for the sanitizer
            from grader.profiling import MISSING as NO_NCU, find_ncu
            ncu = find_ncu()
            if ncu is None:
                sink.error("no_profiler", NO_NCU, EXIT_ERROR)

        info = None
        if backend in ("auto", "cuda"):
            info = dev.detect()
            wrong_gpu = dev.arch_refusal(ex.name, spec.arch, info)
            if wrong_gpu:   # before any case, in one line (grade() refuses too, for its other callers)
                sink.error("wrong_gpu", wrong_gpu, EXIT_ERROR, spec.total_points)
            if mode == "grading" and not allow_unisolated:
                why_not = tracer_refusal()
                if why_not is not None:
                    sink.error("no_kernel_trace", why_not, EXIT_ERROR,
                                spec.total_points)
        ctx = GradingContext.on(info, r, Path(reference_times) if reference_times else None)
        ref_dir = ex.solution if reference and (ex.solution / "solution.py").is_file() else None
        secret = os.environ.get(SECRET_ENV) if mode == "grading" else None
        options = GradeOptions(profile=PROFILES[mode], seed=seed, secret=secret, backend=ctx.backend.name,
                               case_token=case_token, reference=ref_dir, benchmark=not no_timing and not tools,
                               accept_implausible=accept_implausible,
                               hide=tuple(Path(h) for h in hide) + _result_folders(output, json_out, plot))
        result = ctx.grade(spec, sub, options, progress,
                           repro_options=f" --root {shlex.quote(str(Path(root).resolve()))}" if root else "")
    except GradeTimeout:
        progress.done()
        sink.error("time_limit",
                    f"the grade ran past its {limit:g} s time limit; nothing after that point was scored", EXIT_ERROR,
                    spec.total_points)
    except ValueError as exc:  # a malformed --case or calibration file: a user-fixable input
        progress.done()
        sink.error("input", str(exc), EXIT_ERROR)
    except DeviceMemoryError as exc:  # the machine's state, not the submission: no score
        progress.done()
        sink.error("device_memory", str(exc), EXIT_ERROR)
    except Exception as exc:  # noqa: BLE001 - grader bug or broken exercise files: say so, keep the file
        progress.done()
        sink.error("grader_error",
                    f"grader error: {type(exc).__name__}: {exc}", EXIT_ERROR)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    progress.done()
    if not result.graded and result.reason_kind in MACHINE_KINDS:   # no score in any format
        sink.error(result.reason_kind, result.reason, EXIT_ERROR,
                    spec.total_points)
    if tools and sanitizer is not None:
        sys.exit(_sanitize_after(spec, ex.spec_path, sub, result, tools, sanitizer, sink, mode, seed, secret,
                                 case_token))
    if ncu is not None and shape is not None:
        result = _profile_after(spec, sub, result, shape, ncu, fmt)
    code = _exit_code(result, fail_under)
    from grader.report.formats import render
    from grader.report.text import render as render_text
    if plot:
        _write_plot(result, Path(plot))
    sink.emit(lambda f: render(result, f, code), lambda: render_text(result, stdout_console()))
    sys.exit(code)


def _no_gpu(spec, exercise: str, sub: Path, given: bool, arch: str | None, why: str, sanitize: bool,
            sink: ReportSink, profile: bool = False) -> NoReturn:  # type: ignore[no-untyped-def]
    """No GPU here (``why``): what the static checks of --compile-only find in the submission is
    reported as such (exit 3, the no-GPU reason beside it), as ``grade batch`` records it; without a
    problem, the one-line no-GPU message (exit 4). Never returns."""
    from grader.static import without_gpu
    compile_only = f"`grade {exercise}{' --submission ' + shlex.quote(str(sub)) if given else ''} --compile-only`"
    try:
        problem, _ = without_gpu(spec, sub, arch or spec.arch or "sm_90")
    except Exception:  # noqa: BLE001 - a grader bug in the static checks: --compile-only shows it; say no GPU
        problem = None
    if problem:
        sink.error("static_check",
                    f"{problem}; not graded: the static checks of {compile_only} found this (fix it first), and "
                    f"this machine has no GPU to grade on: {why}", EXIT_NOT_GRADED, spec.total_points)
    needs = "grading runs kernels on a GPU"
    if sanitize:
        from grader.sanitize import MISSING, find_sanitizer
        needs = "--sanitize runs kernels on a GPU" + ("" if find_sanitizer() else f"; also {MISSING}")
    if profile:
        from grader.profiling import MISSING as NO_NCU, find_ncu
        needs = "--profile runs kernels on a GPU" + ("" if find_ncu() else f"; also {NO_NCU}")
    sink.error("no_gpu",
                f"{why}: {needs}. Without a GPU, {compile_only} compiles kernel.cu and prints the static report.",
                EXIT_ERROR, spec.total_points)


def _write_plot(result, path: Path) -> None:  # type: ignore[no-untyped-def]
    """--plot: write the roofline plot, or say in one line why it was not written (the grade stands)."""
    from grader.report import roofline_plot
    try:
        path.parent.mkdir(parents=True, exist_ok=True)   # as for --output: _writable checked it can be
        roofline_plot.write(result, path)
    except (roofline_plot.PlotUnavailable, OSError) as exc:
        click.echo(f"grade: no roofline plot written: {exc}", err=True)


def _sanitize_options(tools: str | None, compile_only: bool, backend: str, fmt: str) -> tuple[str, ...]:
    """The tools --sanitize runs; usage errors for combinations it cannot serve."""
    from grader.sanitize import TOOLS, parse_tools
    if compile_only:
        raise click.UsageError("--sanitize runs kernels on the GPU; drop --compile-only")
    if backend == "host":
        raise click.UsageError("--sanitize needs the CUDA backend")
    if fmt not in ("text", "json"):
        raise click.BadParameter("--sanitize writes text or json", param_hint="--format")
    if tools is None:
        return TOOLS
    try:
        return parse_tools(tools)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--sanitize-tools") from None


def _profile_options(sanitize: bool, compile_only: bool, case_token: str | None, backend: str, fmt: str) -> None:
    """Usage errors for combinations --profile cannot serve."""
    if sanitize:
        raise click.UsageError("--profile and --sanitize (or --sanitize-tools) each re-run the kernels under a tool; "
                               "run one at a time")
    if fmt not in ("text", "json", "html"):
        raise click.BadParameter("--profile writes text, json or html (the profile has no place in this format)",
                                 param_hint="--format")
    if compile_only or backend == "host":
        raise click.UsageError("--profile runs kernels on the GPU; drop " + ("--compile-only" if compile_only else "--backend host"))
    if case_token:
        raise click.UsageError("--profile profiles a benchmark shape after a full grade; drop --case "
                               "(choose the shape with --profile-shape)")


def _profile_shape(spec, name: str | None, mode: str):  # type: ignore[no-untyped-def]
    """The benchmark to profile: ``name``, else the first the mode shows. Raises click.BadParameter."""
    shown = [b for b in spec.benchmarks if not b.hidden or mode == "grading"]
    if name is None:
        if not shown:
            raise click.UsageError(f"{spec.name} has no benchmark shape to profile")
        return shown[0]
    for b in shown:
        if b.name == name:
            return b
    raise click.BadParameter(f"{name!r} is not a benchmark shape of {spec.name}; choose from "
                             f"{', '.join(b.name for b in shown)}", param_hint="--profile-shape")


def _profile_after(spec, sub: Path, result, bench, ncu: str, fmt: str):  # type: ignore[no-untyped-def]
    """``result`` with its kernel_profile: ncu on ``bench`` when the grade was correct (else why not)."""
    from dataclasses import replace

    from grader import profiling
    from grader.cases import Case
    token = Case(bench.dims, tuple((n, bench.distribution(n)) for n in spec.drawn), 1, "benchmark", bench.types).token
    if not result.correct:
        data = {"shape": bench.name, "case": token, "status": "skipped", "kernels": [],
                "message": "not run: the submission is not correct; profile it once it passes"}
        return replace(result, kernel_profile=data)
    timeout = profiling.timeout_for(spec.limits.case_s, spec.limits.compile_s)
    if fmt == "text":
        with Console(stderr=True).status(f"Nsight Compute on {bench.name} (up to {timeout:g} s)..."):
            report = profiling.profile(ncu, spec, sub, bench.name, token, timeout)
    else:
        report = profiling.profile(ncu, spec, sub, bench.name, token, timeout)
    timed = next((b.time_ms for b in result.benchmarks if b.name == bench.name), None)
    data = profiling.to_dict(report)
    data["agreement"] = profiling.agreement(report, timed) or (
        "" if report.status != "ok" else "no grader time to compare with: this shape was not timed (--no-timing?)")
    return replace(result, kernel_profile=data)


def _sanitize_after(spec, spec_path: Path, sub: Path, result, tools: tuple[str, ...], sanitizer: str,  # type: ignore[no-untyped-def]
                    sink: ReportSink, mode: str, seed: int, secret: str | None, case_token: str | None) -> int:
    """Run the sanitizer after the correctness pass and report; returns the exit code: 0 clean,
    1 a tool reported errors, 3 the submission could not be graded, 4 a tool could not run."""
    import json

    from grader import sanitize as san
    from grader.report.formats import render
    from grader.report.text import render as render_text

    console = stdout_console()
    if not result.graded:  # compile error, malformed solve...: the grade report says why
        sink.emit(lambda f: render(result, f, EXIT_NOT_GRADED), lambda: render_text(result, console))
        return EXIT_NOT_GRADED
    token, why = san.sanitize_case(spec, result, mode, seed, secret, case_token)
    if token is None:
        click.echo(f"grade: {why}", err=True)
        return EXIT_ERROR
    timeout = san.timeout_for(spec.limits.case_s, spec.limits.compile_s)
    if sink.fmt == "text":
        render_text(result, console)
        console.rule(f"[bold]compute-sanitizer[/]: {', '.join(tools)}")
        console.print(f"case [bold]{escape(token)}[/]: {escape(why)}", highlight=False)
        with console.status("") as status:
            reports = san.sanitize(sanitizer, tools, spec_path, sub, token, timeout,
                                   on_tool=lambda t: status.update(f"running {t} (up to {timeout:g} s)..."))
    else:
        reports = san.sanitize(sanitizer, tools, spec_path, sub, token, timeout)
    found = any(r.findings or r.error_count for r in reports)
    code = EXIT_BELOW if found else EXIT_ERROR if any(r.status != "ok" for r in reports) else EXIT_OK
    data = {"exercise": spec.name, "submission": str(sub), "case": token, "case_reason": why,
            "sanitizer": sanitizer, "exit_code": code, "tools": [san.to_dict(r) for r in reports]}
    lines = san.report_lines(reports)

    def as_text() -> str:   # the grade's text report, then the sanitizer's section without markup
        from io import StringIO
        buf = StringIO()
        plain = Console(file=buf, width=120, force_terminal=False, color_system=None)
        plain.print(f"compute-sanitizer ({', '.join(tools)}) on case {escape(token)}: {escape(why)}", highlight=False)
        for ln in lines:
            plain.print(ln, highlight=False)
        return render(result, "text", code) + buf.getvalue()

    def show() -> None:
        for ln in lines:
            console.print(ln, highlight=False)
    sink.emit(lambda f: json.dumps(data, indent=2) if f == "json" else as_text(), show)
    return code


def _exit_code(result, fail_under: float | None) -> int:  # type: ignore[no-untyped-def]
    if not result.graded:   # MACHINE_KINDS never get here: run_cmd reports them as errors first
        return EXIT_NOT_GRADED
    if fail_under is not None and result.score.total < fail_under:
        return EXIT_BELOW
    return EXIT_OK


def _compile_only(spec, submission: Path, arch: str | None, sink: ReportSink) -> int:  # type: ignore[no-untyped-def]
    """The static report (see grader.static); returns the exit code: 0 no problem and kernel.cu
    compiled, 3 a problem of the submission, 4 kernel.cu could not be compiled here (no compiler)."""
    from grader import device as dev
    from grader.report.formats import render_static
    from grader.static import static_report

    given = arch
    if arch is None:
        info = dev.detect()
        arch = info.arch if info else spec.arch or "sm_90"   # the spec's [features] arch where no GPU says
    try:
        rep = static_report(spec, submission, arch)
    except Exception as exc:  # noqa: BLE001 - a grader bug: say so and still write the result file
        sink.error("grader_error", f"grader error in the static checks: {type(exc).__name__}: {exc}", EXIT_ERROR)
    if given is not None and rep.arch != given:   # a spec pinned to an arch-specific target (static_report)
        click.echo(f"grade: --arch {given} not used: {spec.name} compiles for {rep.arch} only ([features] arch), "
                   f"as grading does", err=True)
    code = EXIT_NOT_GRADED if rep.problems else EXIT_OK if rep.compiled else EXIT_ERROR
    sink.emit(lambda f: render_static(spec, submission, rep, f, code), lambda: _show_static(spec, submission, rep))
    return code


def _show_static(spec, submission: Path, rep) -> None:  # type: ignore[no-untyped-def]
    """The static report on the terminal."""
    from rich.table import Table
    from grader.report.formats import KERNEL_COLUMNS, kernel_rows, static_verdict
    console = stdout_console()
    console.rule(f"[bold]{spec.name}[/]: static report for {escape(str(submission))} ({rep.arch})")
    if rep.compiled:
        console.print(escape(rep.compile_line()), highlight=False)
    if rep.kernels:
        t = Table(show_edge=False)
        for col in KERNEL_COLUMNS:
            t.add_column(col, justify="left" if col == "kernel" else "right")
        for row in kernel_rows(rep):
            t.add_row(*(escape(c) for c in row))
        console.print(t)
    for p in rep.problems:
        console.print(f"[red]problem:[/] {escape(p)}", highlight=False)
    for w in rep.warnings:
        console.print(f"[yellow]warning:[/] {escape(w)}", highlight=False)
    for s in rep.skipped:
        console.print(f"[yellow]not checked here:[/] {escape(s)}", highlight=False)
    color = "red" if rep.problems else "green" if rep.compiled else "yellow"
    console.print(f"[{color}]{escape(static_verdict(rep))}[/]", highlight=False)


for _command in (check_cmd, calibrate_cmd, publish_cmd, new_cmd, batch_cmd):
    main.add_command(_command)


if __name__ == "__main__":
    main()
