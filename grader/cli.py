"""The ``grade`` command: thin: parse, call, print."""
from __future__ import annotations

import os
import shlex
import signal
import sys
import time
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

EXIT_OK = 0            # graded (and at or above --fail-under) / the check passed
EXIT_BELOW = 1         # graded, below --fail-under / the check found problems
EXIT_NOT_GRADED = 3    # the submission could not be graded (missing files, compile error, bad solve)
EXIT_ERROR = 4         # grader or environment error (no GPU, broken spec, time limit, internal error)
# Reasons a grade ends "not graded" that are the machine's, not the submission's: exit 4, and the
# result is an error in every format (no score, a batch grades the pair again)
MACHINE_KINDS = ("no_gpu", "no_isolation")
EXIT_CODES_HELP = """\b
Exit codes of `grade EXERCISE` and `grade batch`:
  0  grading completed (score at or above --fail-under)
  1  grading completed, score below --fail-under (batch: some submission below it)
  2  usage error (bad option or argument)
  3  the submission could not be graded (missing file, compile error, malformed solve)
  4  grader or environment error (no GPU, broken spec, time limit, internal error)
`grade check` and `grade calibrate` exit 0 when everything passed, 1 otherwise."""
FORMATS = ("text", "json", "gradescope", "junit", "html")   # = grader.report.formats.FORMATS
SECRET_ENV = "GRADER_SECRET"
INSTRUCTOR_COMMANDS = ("check", "calibrate", "publish", "new")   # left out of the help in a student bundle


LOG_WIDTH = 120   # columns of the tables when stdout is a file or a CI log and COLUMNS is unset (rich: 80)


def _stdout_console() -> Console:
    """The console of a command's report: a terminal's own width, else COLUMNS, else LOG_WIDTH
    (rich's 80 folded every table of a report written to a file)."""
    if sys.stdout.isatty() or os.environ.get("COLUMNS"):
        return Console()
    return Console(width=LOG_WIDTH)


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
        if not _in_bundle():
            return super().format_help_text(ctx, formatter)
        import inspect
        text = inspect.cleandoc(self.help or "").split("Instructors and CI:")[0].rstrip()
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(text)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if not _in_bundle():
            return super().format_epilog(ctx, formatter)
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text("\n".join(ln for ln in (self.epilog or "").splitlines() if "grade check" not in ln))

    def list_commands(self, ctx: click.Context) -> list[str]:
        hidden = INSTRUCTOR_COMMANDS if _in_bundle() else ()
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
def _in_bundle() -> bool:
    """Whether the course found from the current folder is a published student bundle."""
    from grader.publish import BUNDLE_MARKER
    from grader.spec import find_root
    try:
        return (find_root(None) / BUNDLE_MARKER).is_file()
    except (FileNotFoundError, OSError):
        return False


def _needs_solutions(root: Path, command: str) -> None:
    """A usage error when ``grade COMMAND`` (an instructor's command) runs in a published student
    bundle (``grade publish`` marks one, see grader.publish.BUNDLE_MARKER)."""
    from grader.publish import BUNDLE_MARKER
    if (root / BUNDLE_MARKER).is_file():
        raise click.UsageError(f"grade {command} is an instructor's command: {root} is a published student bundle "
                               f"(no solutions/ folder); run it in the course repository. Students: grade EXERCISE, "
                               f"grade EXERCISE --compile-only, grade list")


def _root(root: str | None) -> Path:
    from grader.spec import find_root
    try:
        return find_root(Path(root) if root else None)
    except FileNotFoundError as exc:
        raise click.UsageError(str(exc)) from None


def _exercises(root: Path, names: tuple[str, ...] | list[str], commands: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    """The named exercises (each may be a comma-separated list), or all when none is named;
    ``commands`` (the words `grade` also takes there) are suggested when one is close to a name."""
    from grader.spec import list_exercises, resolve_exercise
    if not names:
        return list_exercises(root)
    wanted = [n.strip() for part in names for n in part.split(",") if n.strip()]
    if not wanted:
        raise click.UsageError(f"no exercise named in {list(names)!r}; see `grade list`")
    try:
        return [resolve_exercise(root, n, commands) for n in wanted]
    except LookupError as exc:
        raise click.UsageError(str(exc)) from None


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


def _detect_gpu() -> object:
    from grader import device as dev
    why = dev.unavailable_reason()
    if why is not None:
        return None
    return dev.detect()


root_option = click.option("--root", type=click.Path(file_okay=False),
                           help="Course folder (default: found from the current folder).")


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

    console = _stdout_console()
    t = Table(show_edge=False)
    for col in ("exercise", "title", "points", "your folder"):
        t.add_column(col, overflow="fold")
    r = _root(root)
    for ex in list_exercises(r):
        try:
            spec = load_spec(ex.spec_path)
            t.add_row(ex.name, spec.title, f"{spec.total_points:g}", str(ex.template.relative_to(r)))
        except SpecError as exc:
            t.add_row(ex.name, f"[red]invalid spec: {escape(str(exc))}[/]", "-", "-")
    console.print(t)


def _emit_error(fmt: str, output: str | None, json_out: str | None, exercise: str, submission: str, kind: str,
                message: str, code: int, max_score: float | None = None) -> None:
    from grader.report.clean import printable
    from grader.report.formats import render_error, write
    click.echo(f"grade: {printable(message)}", err=True)
    if json_out:
        write(render_error("json", exercise, submission, kind, message, code, max_score), Path(json_out))
    if fmt != "text":
        text = render_error(fmt, exercise, submission, kind, message, code, max_score)
        if output:
            write(text, Path(output))
        else:
            click.echo(text)
    elif output:
        write(render_error("text", exercise, submission, kind, message, code, max_score), Path(output))
    sys.exit(code)


def _isolation_refusal() -> str | None:
    """Why --mode grading cannot isolate the submission's worker from the course files here (None: it can)."""
    from grader.sandbox.isolation import unavailable_reason
    why = unavailable_reason()
    return None if why is None else (
        f"--mode grading needs the submission's worker isolated from the course files, which is not possible "
        f"here ({why}); fix: grade where user namespaces work, or pass --allow-unisolated to grade anyway")


def _secret_refusal() -> str | None:
    """Why --mode grading cannot keep its cases and benchmark inputs from the students here (None: it
    can): without $GRADER_SECRET (unset, or empty as a CI secret that was never defined expands to)
    the seed is the public one, so every case and every timed input set is the one a student's own
    ``grade --mode grading`` draws, and a submission can precompute their outputs."""
    if os.environ.get(SECRET_ENV, "").strip():
        return None
    return (f"--mode grading needs ${SECRET_ENV} (any private string; it is mixed into the seed of the cases and "
            f"of the benchmark inputs): without it they are the public ones a student can reproduce and "
            f"precompute; fix: set {SECRET_ENV}, e.g. from your CI's secrets")


def _tracer_refusal() -> str | None:
    """Why --mode grading cannot trace the submission's kernels here (None: it can; builds the tracer)."""
    from grader.sandbox.kernel_trace import build as build_tracer
    from grader.sandbox.supervisor import kernel_cache_root
    tracer = build_tracer(kernel_cache_root().parent)
    return None if not isinstance(tracer, str) else (
        f"--mode grading needs the kernel tracer that checks the submission runs its own kernels, which is not "
        f"available here ({tracer}); fix: install the CUDA toolkit's CUPTI and a C compiler, or pass "
        f"--allow-unisolated to grade anyway")


@main.command("run", cls=RunCommand, epilog=EXIT_CODES_HELP)
@click.argument("exercise")
@click.option("--submission", "-s", type=click.Path(), help="Folder with kernel.cu and solution.py "
              "(default: student_template/<exercise> in the course folder).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="Report format: text, json (schema grader/report/schema.json), gradescope (results.json), junit, "
              "html (one self-contained page with the roofline plot).")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the report here (always written, "
              "also when the submission crashes or the time limit hits).")
@click.option("--plot", "plot", type=click.Path(dir_okay=False), help="Also write the roofline plot of the timed "
              "shapes here (.png or .svg; needs matplotlib).")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), help="Also write the JSON result here.")
@click.option("--mode", type=click.Choice(["quick", "grading"]), default="quick", show_default=True,
              help="quick: a fast student run; grading: more cases, hidden checks, seed mixed with $GRADER_SECRET.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for case generation and timing order.")
@click.option("--case", "case_token", help="Re-run one case, as printed in a failure's 'reproduce' line.")
@click.option("--no-timing", is_flag=True, help="Check correctness only.")
@click.option("--compile-only", is_flag=True, help="No GPU needed: compile kernel.cu with NVRTC (as grading does), "
              "check solution.py and the features, print registers/shared memory/spills per kernel. Not graded: "
              "nothing runs. Exit 4 when kernel.cu could not be compiled here.")
@click.option("--arch", default=None, help="Arch for --compile-only, e.g. sm_90 or sm_90a (default: this GPU's, "
              "else sm_90).")
@click.option("--fail-under", type=float, default=None, help="Exit 1 when the score is below this many points.")
@click.option("--accept-implausible", is_flag=True, help="Instructors, after review: keep the performance points "
              "of a result flagged as physically implausible (above the measured ceiling or far faster than the "
              "reference); without it they are withheld.")
@click.option("--reference/--no-reference", default=True, show_default=True,
              help="Time the reference solution side by side when solutions/<exercise> exists.")
@click.option("--reference-times", type=click.Path(dir_okay=False, exists=True),
              help="Reference times in the calibration format, used instead of calibration/<arch>.toml.")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds for the whole grade (default: the spec's [limits] total_s).")
@click.option("--case-limit", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds for one call of solve (default: the spec's [limits] case_s).")
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
@click.option("--allow-unisolated", is_flag=True, help="Grade in --mode grading even where the submission's "
              "worker cannot be isolated from the course files (no user namespaces) or its kernels cannot be traced "
              "(no CUPTI); the report says so.")
@root_option
@click.option("--backend", type=click.Choice(["auto", "cuda", "host"]), default="auto", hidden=True,
              help="host runs numpy submissions on the CPU (for the grader's own tests).")
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
    r = _root(root)
    ex = _exercises(r, [exercise], _commands())[0]
    if submission is not None and not submission.strip():
        raise click.BadParameter("is empty; give a folder with kernel.cu and solution.py", param_hint="--submission")
    sub = Path(submission) if submission else ex.template
    _writable(output, "--output")
    _writable(json_out, "--json")
    if mode == "grading":
        _result_paths_hideable(output=output, json=json_out, plot=plot)
    try:
        spec = load_spec(ex.spec_path)
    except SpecError as exc:
        _emit_error(fmt, output, json_out, ex.name, str(sub), "spec", str(exc), EXIT_ERROR)
    if case_token:
        from grader.cases import parse_token
        try:
            parse_token(spec, case_token)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--case") from None
    if compile_only:
        sys.exit(_compile_only(spec, sub, arch, fmt, output, json_out))
    shape = _profile_shape(spec, profile_shape, mode) if profile_kernels else None
    if mode == "grading" and not allow_unisolated:
        why_not = _isolation_refusal()
        if why_not is not None:
            _emit_error(fmt, output, json_out, ex.name, str(sub), "no_isolation", why_not, EXIT_ERROR,
                        spec.total_points)
    if mode == "grading" and _secret_refusal() is not None:
        _emit_error(fmt, output, json_out, ex.name, str(sub), "no_secret", _secret_refusal(), EXIT_ERROR,
                    spec.total_points)
    from grader import device as dev
    from grader.calibration import load_calibration, load_calibration_file
    from grader.cases import PROFILES
    from grader.grade import GradeOptions, grade
    from grader.report.text import TerminalProgress
    from grader.sandbox.buffers import CudaBackend, DeviceMemoryError, HostBackend
    from grader.static import static_check

    limit = time_limit or spec.limits.total_s
    progress = TerminalProgress(Console(stderr=True))
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)   # from the static checks on: nothing of a grade outlives it
    try:
        problem = static_check(spec, sub)
        if problem:  # before looking for a GPU: a missing or forbidden submission is the user's to fix
            _emit_error(fmt, output, json_out, ex.name, str(sub), problem[0], problem[1], EXIT_NOT_GRADED,
                        spec.total_points)
        if case_limit:
            from dataclasses import replace
            spec = replace(spec, limits=replace(spec.limits, case_s=case_limit))
        if backend in ("auto", "cuda"):
            why = dev.unavailable_reason()
            if why is not None:
                _no_gpu(spec, ex.name, sub, submission is not None, arch, why, bool(tools), fmt, output, json_out,
                        profile_kernels)
        sanitizer = None
        if tools:  # before grading: without the tool nothing here can help
            from grader.sanitize import MISSING, find_sanitizer
            sanitizer = find_sanitizer()
            if sanitizer is None:
                _emit_error(fmt, output, json_out, ex.name, str(sub), "no_sanitizer", MISSING, EXIT_ERROR)

        ncu = None
        if profile_kernels:  # before grading, as for the sanitizer
            from grader.profiling import MISSING as NO_NCU, find_ncu
            ncu = find_ncu()
            if ncu is None:
                _emit_error(fmt, output, json_out, ex.name, str(sub), "no_profiler", NO_NCU, EXIT_ERROR)

        info = None
        if backend in ("auto", "cuda"):
            info = dev.detect()
            wrong_gpu = dev.arch_refusal(ex.name, spec.arch, info)
            if wrong_gpu:   # before any case, in one line (grade() refuses too, for its other callers)
                _emit_error(fmt, output, json_out, ex.name, str(sub), "wrong_gpu", wrong_gpu, EXIT_ERROR, spec.total_points)
            if mode == "grading" and not allow_unisolated:
                why_not = _tracer_refusal()
                if why_not is not None:
                    _emit_error(fmt, output, json_out, ex.name, str(sub), "no_kernel_trace", why_not, EXIT_ERROR,
                                spec.total_points)
        be = CudaBackend() if info is not None else HostBackend()
        ceilings = dev.ceilings(info, {spec.ceiling}) if info is not None else None
        calibration = (load_calibration_file(Path(reference_times)) if reference_times
                       else load_calibration(r, info.arch if info else None))
        ref_dir = ex.solution if reference and (ex.solution / "solution.py").is_file() else None
        secret = os.environ.get(SECRET_ENV) if mode == "grading" else None
        options = GradeOptions(profile=PROFILES[mode], seed=seed, secret=secret, backend=be.name,
                               case_token=case_token, reference=ref_dir, benchmark=not no_timing and not tools,
                               accept_implausible=accept_implausible,
                               hide=tuple(Path(h) for h in hide) + _result_folders(output, json_out, plot))
        result = grade(spec, sub, options, be, info, ceilings, calibration, progress,
                       repro_options=f" --root {shlex.quote(str(Path(root).resolve()))}" if root else "")
    except GradeTimeout:
        progress.done()
        _emit_error(fmt, output, json_out, ex.name, str(sub), "time_limit",
                    f"the grade ran past its {limit:g} s time limit; nothing after that point was scored", EXIT_ERROR,
                    spec.total_points)
    except ValueError as exc:  # a malformed --case or calibration file: a user-fixable input
        progress.done()
        _emit_error(fmt, output, json_out, ex.name, str(sub), "input", str(exc), EXIT_ERROR)
    except DeviceMemoryError as exc:  # the machine's state, not the submission: no score
        progress.done()
        _emit_error(fmt, output, json_out, ex.name, str(sub), "device_memory", str(exc), EXIT_ERROR)
    except Exception as exc:  # noqa: BLE001 - grader bug or broken exercise files: say so, keep the file
        progress.done()
        _emit_error(fmt, output, json_out, ex.name, str(sub), "grader_error",
                    f"grader error: {type(exc).__name__}: {exc}", EXIT_ERROR)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    progress.done()
    if result.status != "graded" and result.reason_kind in MACHINE_KINDS:   # no score in any format
        _emit_error(fmt, output, json_out, ex.name, str(sub), result.reason_kind, result.reason, EXIT_ERROR,
                    spec.total_points)
    if tools and sanitizer is not None:
        sys.exit(_sanitize_after(spec, ex.spec_path, sub, result, tools, sanitizer, fmt, output, json_out,
                                 mode, seed, secret, case_token))
    if ncu is not None and shape is not None:
        result = _profile_after(spec, sub, result, shape, ncu, fmt)
    code = _exit_code(result, fail_under)
    from grader.report.formats import render, write
    if json_out:
        write(render(result, "json", code), Path(json_out))
    if plot:
        _write_plot(result, Path(plot))
    if fmt == "text":
        from grader.report.text import render as render_text
        render_text(result, _stdout_console())
        if output:
            write(render(result, "text", code), Path(output))
    else:
        text = render(result, fmt, code)
        if output:
            write(text, Path(output))
        else:
            click.echo(text)
    sys.exit(code)


def _no_gpu(spec, exercise: str, sub: Path, given: bool, arch: str | None, why: str, sanitize: bool, fmt: str,
            output: str | None, json_out: str | None, profile: bool = False) -> None:  # type: ignore[no-untyped-def]
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
        _emit_error(fmt, output, json_out, exercise, str(sub), "static_check",
                    f"{problem}; not graded: the static checks of {compile_only} found this (fix it first), and "
                    f"this machine has no GPU to grade on: {why}", EXIT_NOT_GRADED, spec.total_points)
    needs = "grading runs kernels on a GPU"
    if sanitize:
        from grader.sanitize import MISSING, find_sanitizer
        needs = "--sanitize runs kernels on a GPU" + ("" if find_sanitizer() else f"; also {MISSING}")
    if profile:
        from grader.profiling import MISSING as NO_NCU, find_ncu
        needs = "--profile runs kernels on a GPU" + ("" if find_ncu() else f"; also {NO_NCU}")
    _emit_error(fmt, output, json_out, exercise, str(sub), "no_gpu",
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


def sanitize_case(spec, result, mode: str, seed: int, secret: str | None,
                  case_token: str | None) -> tuple[str | None, str]:  # type: ignore[no-untyped-def]
    """(token, why it was chosen) of the case to sanitize: --case, else the smallest failing case,
    else the largest edge case under the sanitizer's size cap (see grader.sanitize.pick_edge_case);
    (None, why) when there is none."""
    from grader.cases import PROFILES, combine_seed, edge_cases
    from grader.sanitize import pick_edge_case
    if case_token:
        return case_token, "the case given with --case"
    small = result.smallest_failure
    if small is not None and small.token:
        return small.token, f"the smallest failing case ({small.description}: {small.status})"
    edges = edge_cases(spec, PROFILES[mode], combine_seed(seed, secret))
    if edges:
        return pick_edge_case(spec, edges)
    return None, "no case failed and the spec has no edge cases; pass --case TOKEN"


def _sanitize_after(spec, spec_path: Path, sub: Path, result, tools: tuple[str, ...], sanitizer: str, fmt: str,
                    output: str | None, json_out: str | None, mode: str, seed: int, secret: str | None,
                    case_token: str | None) -> int:  # type: ignore[no-untyped-def]
    """Run the sanitizer after the correctness pass and report; returns the exit code: 0 clean,
    1 a tool reported errors, 3 the submission could not be graded, 4 a tool could not run."""
    from grader import sanitize as san
    from grader.report.formats import render, write

    console = _stdout_console()
    if result.status != "graded":  # compile error, malformed solve...: the grade report says why
        code = EXIT_NOT_GRADED
        if fmt == "text":
            from grader.report.text import render as render_text
            render_text(result, console)
        else:
            click.echo(render(result, "json", code))
        for path in (p for p in (output, json_out) if p):
            write(render(result, "json" if path == json_out or fmt == "json" else "text", code), Path(path))
        return code
    token, why = sanitize_case(spec, result, mode, seed, secret, case_token)
    if token is None:
        click.echo(f"grade: {why}", err=True)
        return EXIT_ERROR
    timeout = san.timeout_for(spec.limits.case_s, spec.limits.compile_s)
    if fmt == "text":
        from grader.report.text import render as render_text
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
    import json
    text_json = json.dumps(data, indent=2)
    if json_out:
        write(text_json, Path(json_out))
    if fmt == "json":
        if output:
            write(text_json, Path(output))
        else:
            click.echo(text_json)
        return code
    lines = sanitize_text(reports)
    for ln in lines:
        console.print(ln, highlight=False)
    if output:
        from io import StringIO
        buf = StringIO()
        plain = Console(file=buf, width=120, force_terminal=False, color_system=None)
        plain.print(f"compute-sanitizer ({', '.join(tools)}) on case {escape(token)}: {escape(why)}", highlight=False)
        for ln in lines:
            plain.print(ln, highlight=False)
        write(render(result, "text", code) + buf.getvalue(), Path(output))
    return code


SANITIZE_SHOWN = 3  # findings shown per tool


def sanitize_text(reports) -> list[str]:  # type: ignore[no-untyped-def]
    """The sanitizer section, as rich markup lines."""
    from grader.sanitize import summary_line
    lines = []
    for r in reports:
        color = "green" if r.clean else "yellow" if r.status != "ok" and not r.findings else "red"
        lines.append(f"[{color}]{escape(summary_line(r))}[/]" + (f" ({r.seconds:.0f} s)" if r.seconds >= 1 else ""))
        if r.message:
            lines.append(f"  {escape(r.message)}")
        for f in r.findings[:SANITIZE_SHOWN]:
            times = f" (x{f.repeats})" if f.repeats > 1 else ""
            sev = "" if f.severity == "error" else f" [{f.severity}]"
            lines.append(f"  [bold]{escape(f.where)}[/]: {escape(f.kind)}{escape(sev)}{times}")
            if f.message:
                lines.append(f"      {escape(f.message)}")
        more = len(r.findings) - SANITIZE_SHOWN
        if more > 0 or r.not_printed:
            lines.append(f"  ... {max(more, 0)} more distinct report(s)"
                         + (f", {r.not_printed} beyond the print limit" if r.not_printed else ""))
        if r.findings and not any(f.line for f in r.findings):
            lines.append("  (no kernel.cu line: was the kernel compiled through grader.kernel.load?)")
        if r.note:
            lines.append(f"  [dim]{escape(r.note)}[/]")
        if r.status != "ok" and r.raw_tail:
            lines += [f"  | {escape(t)}" for t in r.raw_tail.splitlines()[-8:]]
    return lines


def _exit_code(result, fail_under: float | None) -> int:  # type: ignore[no-untyped-def]
    if result.status != "graded":   # MACHINE_KINDS never get here: run_cmd reports them as errors first
        return EXIT_NOT_GRADED
    if fail_under is not None and result.score.total < fail_under:
        return EXIT_BELOW
    return EXIT_OK


def _compile_only(spec, submission: Path, arch: str | None, fmt: str = "text", output: str | None = None,
                  json_out: str | None = None) -> int:  # type: ignore[no-untyped-def]
    """The static report (see grader.static); returns the exit code: 0 no problem and kernel.cu
    compiled, 3 a problem of the submission, 4 kernel.cu could not be compiled here (no compiler)."""
    from rich.table import Table
    from grader import device as dev
    from grader.report.formats import render_static, static_verdict, write
    from grader.static import static_report

    if arch is None:
        info = dev.detect()
        arch = info.arch if info else spec.arch or "sm_90"   # the spec's [features] arch where no GPU says
    try:
        rep = static_report(spec, submission, arch)
    except Exception as exc:  # noqa: BLE001 - a grader bug: say so and still write the result file
        _emit_error(fmt, output, json_out, spec.name, str(submission), "grader_error",
                    f"grader error in the static checks: {type(exc).__name__}: {exc}", EXIT_ERROR)
    code = EXIT_NOT_GRADED if rep.problems else EXIT_OK if rep.compiled else EXIT_ERROR
    if json_out:
        write(render_static(spec, submission, rep, "json", code), Path(json_out))
    if fmt != "text":
        text = render_static(spec, submission, rep, fmt, code)
        if output:
            write(text, Path(output))
        else:
            click.echo(text)
        return code
    if output:
        write(render_static(spec, submission, rep, "text", code), Path(output))
    console = _stdout_console()
    console.rule(f"[bold]{spec.name}[/]: static report for {escape(str(submission))} ({arch})")
    if rep.compiled:
        console.print(escape(rep.compile_line()), highlight=False)
    if rep.kernels:
        t = Table(show_edge=False)
        for col in ("kernel", "registers", "shared B", "stack B", "spill stores B", "spill loads B"):
            t.add_column(col, justify="left" if col == "kernel" else "right")
        for k in rep.kernels:
            t.add_row(escape(k.name), str(k.registers), str(k.shared_bytes), str(k.stack_bytes),
                      str(k.spill_store_bytes), str(k.spill_load_bytes))
        console.print(t)
    for p in rep.problems:
        console.print(f"[red]problem:[/] {escape(p)}", highlight=False)
    for w in rep.warnings:
        console.print(f"[yellow]warning:[/] {escape(w)}", highlight=False)
    for s in rep.skipped:
        console.print(f"[yellow]not checked here:[/] {escape(s)}", highlight=False)
    color = "red" if rep.problems else "green" if rep.compiled else "yellow"
    console.print(f"[{color}]{escape(static_verdict(rep))}[/]", highlight=False)
    return code


def _gpu_grader(root: Path, info):  # type: ignore[no-untyped-def]
    """grade_fn(spec, folder, reference) for instructor commands on this GPU."""
    from grader import device as dev
    from grader.calibration import load_calibration
    from grader.cases import PROFILES
    from grader.grade import GradeOptions, grade
    from grader.sandbox.buffers import CudaBackend

    be = CudaBackend()
    cal = load_calibration(root, info.arch)

    def grade_fn(spec, folder, reference, policy=None):  # type: ignore[no-untyped-def]
        from grader.timing import StopPolicy
        opts = GradeOptions(profile=PROFILES["quick"], reference=reference, policy=policy or StopPolicy())
        return grade(spec, folder, opts, be, info, dev.ceilings(info, {spec.ceiling}), cal)
    return grade_fn


# -- instructor commands ----------------------------------------------------------------------------
@main.command("check")
@click.argument("exercises", nargs=-1)
@click.option("--no-controls", is_flag=True, help="Skip the negative controls (they run on the CPU).")
@root_option
def check_cmd(exercises: tuple[str, ...], no_controls: bool, root: str | None) -> None:
    """Check that every exercise is ready: spec valid, points add up, solution full marks, stub
    zero, negative controls fail. Without a GPU it checks what it can and lists what it skipped.
    Exits 1 on any problem (TODOs are listed, not counted as problems)."""
    from rich.table import Table
    from grader.check import check_exercise

    r = _root(root)
    _needs_solutions(r, "check")
    info = _detect_gpu()
    grade_fn = _gpu_grader(r, info) if info is not None else None
    console = _stdout_console()
    t = Table(show_edge=False)
    for col in ("exercise", "check", "status", "detail"):
        t.add_column(col, overflow="fold")
    failed = 0
    rows_seen = []
    log = None if console.is_terminal else Console(stderr=True)   # a CI log: the spinner is not drawn
    with console.status("checking...") as status:
        for ex in _exercises(r, exercises):
            status.update(f"checking {ex.name}")
            if log is not None:
                log.print(f"checking {ex.name}...", highlight=False)
            for row in check_exercise(ex, info is not None, not no_controls, grade_fn):
                rows_seen.append(row)
                color = {"ok": "green", "fail": "red", "skip": "yellow", "todo": "yellow"}[row.status]
                t.add_row(row.exercise, row.item, f"[{color}]{row.status}[/]", escape(row.detail))
                failed += row.status == "fail"
    console.print(t)
    if info is None:
        console.print("[yellow]No GPU here: solutions and stubs were not run; run `grade check` on a GPU machine.[/]")
    skipped = sum(row.status == "skip" for row in rows_seen)
    todo = sum(row.status == "todo" for row in rows_seen)
    tail = "".join([f"; {skipped} skipped" if skipped else "", f"; TODOs left (the {todo} todo row(s) above)" if todo else ""])
    verdict = ("all checks that ran passed" if skipped or todo else "all checks passed") if not failed \
        else f"{failed} problem(s)"
    console.print(f"[bold]{verdict}{tail}[/]")
    sys.exit(EXIT_OK if not failed else EXIT_BELOW)


@main.command("calibrate")
@click.argument("exercises", nargs=-1)
@click.option("--dry-run", is_flag=True, help="Measure and report, write nothing.")
@root_option
def calibrate_cmd(exercises: tuple[str, ...], dry_run: bool, root: str | None) -> None:
    """Time the reference solutions on this GPU and write calibration/<arch>.toml. Refuses (and
    says why) when a measurement is too noisy or the clock throttled; exits 1 then."""
    from rich.table import Table
    from grader import calibrate as cal
    from grader.calibration import calibration_path, write_calibration
    from grader.grade import versions

    r = _root(root)
    _needs_solutions(r, "calibrate")
    chosen = _exercises(r, exercises)   # a misspelt name is a usage error, GPU or not
    info = _detect_gpu()
    if info is None:
        from grader.device import unavailable_reason
        raise click.ClickException(f"{unavailable_reason()}: calibration times kernels on a GPU")
    from grader.device import foreign_gpu_processes
    grade_fn = _gpu_grader(r, info)
    console = _stdout_console()
    with console.status("timing the reference solutions...") as status:
        done = [0]

        def progress(name: str) -> None:
            done[0] += 1
            status.update(f"timing the reference solutions: {name} ({done[0]}/{len(chosen)})")
        results = cal.calibrate_all(chosen, grade_fn, lambda: foreign_gpu_processes(info.index), progress)
    t = Table(show_edge=False)
    for col in ("exercise", "shape", "median ms", "IQR ms", "samples", "verdict"):
        t.add_column(col)
    for c in results:
        t.add_row(c.exercise, c.shape, f"{c.median_ms:.4f}" if c.median_ms else "-",
                  f"{c.iqr_ms:.4f}" if c.iqr_ms is not None else "-", str(c.samples),
                  "[green]ok[/]" if c.refused is None else f"[red]refused: {c.refused}[/]")
    console.print(t)
    accepted = cal.entries(results)
    path = calibration_path(r, info.arch)
    if accepted and not dry_run:
        write_calibration(path, cal.meta(info, versions(info)), accepted)
        console.print(f"wrote {path} ({', '.join(accepted)})")
    refused = sorted({c.exercise for c in results if c.refused})
    if refused:
        console.print(f"[red]not written: {', '.join(refused)}[/] (fix the cause and re-run on a quiet GPU)")
    sys.exit(EXIT_OK if not refused else EXIT_BELOW)


@main.command("publish")
@click.argument("out", type=click.Path(file_okay=False))
@click.option("--exercises", "names", default="", help="Comma-separated subset (default: all).")
@click.option("--install-check/--no-install-check", default=True, show_default=True,
              help="Install the bundle in a fresh virtual environment and run grade there.")
@click.option("--force", is_flag=True, help="Replace an earlier bundle in OUT (its .git folder is kept); a folder "
              "that holds anything else is refused.")
@root_option
def publish_cmd(out: str, names: str, install_check: bool, force: bool, root: str | None) -> None:
    """Write the student bundle to OUT (grader, exercises without hidden checks, stubs as
    student_template/, calibration, a student README; nothing from solutions/) and check it:
    no solution line leaked, no hidden setting left, and it installs and runs. Exits 1 on a problem."""
    from grader.publish import BUNDLE_MARKER, publish

    r = _root(root)
    _needs_solutions(r, "publish")
    exs = _exercises(r, [names] if names else [])
    try:
        rep = publish(r, Path(out), exs, install_check, force)
    except (FileExistsError, ValueError) as exc:
        raise click.UsageError(str(exc)) from None
    if rep.replaced:
        click.echo(f"--force: removed the earlier bundle in {rep.out}: everything but .git ({len(rep.replaced)} "
                   f"entr{'y' if len(rep.replaced) == 1 else 'ies'}: {', '.join(rep.replaced)})")
    click.echo(f"wrote {rep.files} files for {', '.join(rep.exercises)} to {rep.out}")
    click.echo(f"install check: {rep.install}")
    for p in rep.problems:
        click.echo(f"problem: {p}")
    click.echo("bundle checks passed" if not rep.problems else
               f"{len(rep.problems)} problem(s): the bundle in {rep.out} is NOT ready to hand out (its "
               f"{BUNDLE_MARKER} file says so); fix them and publish again with --force")
    sys.exit(EXIT_OK if not rep.problems else EXIT_BELOW)


@main.command("new")
@click.argument("name")
@click.option("--from", "source", default=None, help="Start from a copy of this exercise.")
@root_option
def new_cmd(name: str, source: str | None, root: str | None) -> None:
    """Scaffold exercises/NAME, its stub and its solution (NAME like ex17_my_kernel)."""
    from grader.scaffold import create

    r = _root(root)
    _needs_solutions(r, "new")
    src = _exercises(r, [source])[0] if source else None
    try:
        written = create(r, name, src)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    for p in written:
        click.echo(f"created {p.relative_to(r)}")
    click.echo(f"next: replace the TODOs, then `grade check {name}`")


@main.command("batch", epilog=EXIT_CODES_HELP)
@click.argument("submissions", type=click.Path(file_okay=False))
@click.option("--exercises", "names", default="", help="Comma-separated exercises (default: all).")
@click.option("--gpus", default="0", show_default=True, help="Comma-separated GPU indices: one worker each.")
@click.option("--out", "out", type=click.Path(file_okay=False), default="batch-results", show_default=True,
              help="Results folder (re-run the same command to resume).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="Format of each student's own report file.")
@click.option("--mode", type=click.Choice(["quick", "grading"]), default="grading", show_default=True,
              help="grading: more cases, hidden checks, seed mixed with $GRADER_SECRET (refused when it is "
                   "unset); quick: a student's fast run.")
@click.option("--fail-under", type=float, default=None, help="Exit 1 when any score is below this.")
@click.option("--case-limit", type=float, default=None, help="Seconds for one call of solve (default: the spec's).")
@click.option("--allow-unisolated", is_flag=True, help="Grade in --mode grading even where the workers cannot be "
              "isolated from the course files or their kernels cannot be traced; each report says so.")
@click.option("--executor", type=click.Choice(["local", "slurm", "debug"]), default="local", show_default=True,
              help="local: grade here, one worker per --gpus entry; slurm: split the work into Slurm jobs through "
              "submitit (this process waits, then writes the summaries; needs submitit); debug: the same jobs run "
              "in this process through submitit (a dry run).")
@click.option("--partition", default=None, help="With --executor slurm: the Slurm partition (default: the cluster's).")
@click.option("--gpus-per-job", type=click.IntRange(min=1), default=1, show_default=True,
              help="With --executor slurm: GPUs each job asks for (one worker each).")
@click.option("--per-job", type=click.IntRange(min=1), default=50, show_default=True,
              help="With --executor slurm: student/exercise pairs per job.")
@click.option("--job-minutes", type=click.IntRange(min=1), default=120, show_default=True,
              help="With --executor slurm: each job's time limit in minutes (a job cut short is resumed by "
              "running the same command again).")
@root_option
@click.option("--backend", type=click.Choice(["auto", "cuda", "host"]), default="auto", hidden=True)
def batch_cmd(submissions: str, names: str, gpus: str, out: str, fmt: str, mode: str, fail_under: float | None,
              case_limit: float | None, allow_unisolated: bool, executor: str, partition: str | None,
              gpus_per_job: int, per_job: int, job_minutes: int, root: str | None, backend: str) -> None:
    """Grade SUBMISSIONS/<student>/<exercise>/ for every student and exercise: one worker per GPU
    (or Slurm jobs, --executor slurm), reference timings measured once and shared, resumable,
    summary.csv, summary.json and index.html in --out, with a summary per exercise (correct, median score,
    fastest speed against the reference, fast_p at p = 0.5, 0.8, 1: the share of submissions correct and at
    least p times as fast as the reference)."""
    from rich.progress import Progress
    from grader import batch as gb

    r = _root(root)
    exs = _exercises(r, [names] if names else [])
    out_dir = Path(out)
    try:
        jobs, missing = gb.discover(Path(submissions), exs, skip=out_dir)
    except FileNotFoundError as exc:
        raise click.UsageError(str(exc)) from None
    gpu_list: list[str | None] = [g.strip() for g in gpus.split(",") if g.strip()] or [None]
    if not all(g is None or g.isdigit() for g in gpu_list):
        raise click.BadParameter(f"{gpus!r} is not a comma-separated list of GPU indices", param_hint="--gpus")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.BadParameter(f"cannot create {out}: {exc.strerror or exc}", param_hint="--out") from None
    info = None
    if backend != "host":
        info = _detect_gpu()
        if info is None and executor == "slurm":
            pass   # the jobs run on GPU nodes; each grade uses its GPU model's calibration file
        elif info is None:  # record what can be found without a GPU, then the no-GPU exit
            from grader.device import unavailable_reason
            why = unavailable_reason() or "no GPU"
            rows = gb.static_rows(jobs, missing, why)
            gb.write_summaries(out_dir, rows)
            click.echo(f"grade: {why}: batch grading runs kernels on a GPU; nothing was graded. "
                       f"{_static_counts(rows)}: {out_dir / 'summary.csv'} (column reason)", err=True)
            sys.exit(EXIT_ERROR)
        if mode == "grading" and not allow_unisolated:  # once, not once per student
            why_not = _isolation_refusal() or _tracer_refusal()
            if why_not is not None:
                click.echo(f"grade batch: nothing was graded: {why_not}", err=True)
                sys.exit(EXIT_ERROR)
    if mode == "grading" and _secret_refusal() is not None:   # once, not once per student
        click.echo(f"grade batch: nothing was graded: {_secret_refusal()}", err=True)
        sys.exit(EXIT_ERROR)
    extra = (["--mode", mode] + (["--backend", backend] if backend != "auto" else [])
             + (["--case-limit", str(case_limit)] if case_limit else [])
             + (["--allow-unisolated"] if allow_unisolated else []))
    reference_times = _shared_reference_times(r, exs, out_dir, info) if info is not None else None
    console = _stdout_console()
    if executor != "local":
        from grader.cluster import ClusterOptions, ClusterUnavailable, submit_and_wait
        opts = ClusterOptions(executor, per_job, gpus_per_job, job_minutes, partition)
        try:
            with console.status("submitting...") as status:
                rows = submit_and_wait(jobs, missing, opts, out_dir, r, fmt, reference_times, extra,
                                       on_job=lambda k, n: status.update(f"cluster jobs finished: {k}/{n}"))
        except ClusterUnavailable as exc:
            click.echo(f"grade batch: nothing was graded: {exc}", err=True)
            sys.exit(EXIT_ERROR)
        _batch_table(console, rows, out_dir, missing)
        _batch_exit(rows, fail_under)
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
    failures, started = [0], time.perf_counter()

    def done(job: gb.Job, data: dict) -> None:
        failures[0] += data.get("status") != "graded" or not data.get("correct")
        n = bar.tasks[0].completed + 1
        rate = n / max(time.perf_counter() - started, 1e-9) * 60
        bar.update(task, advance=1, description=f"{job.student}/{job.exercise.name}", failures=failures[0],
                   rate=f"{rate:.1f}/min")

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                  TextColumn("[red]{task.fields[failures]} not correct[/]"), TimeElapsedColumn(), TextColumn("ETA"),
                  TimeRemainingColumn(), console=console) as bar:
        task = bar.add_task("grading", total=len(jobs), failures=0, rate="-")
        rows = gb.run_batch(jobs, out_dir, r, gpu_list if backend != "host" else [None], fmt, reference_times,
                            extra, on_done=done, missing=missing)
    _batch_table(console, rows, out_dir, missing)
    _batch_exit(rows, fail_under)


def _static_counts(rows: list) -> str:  # type: ignore[type-arg]
    """What a batch without a GPU found, each count named for what it counts: "Of 4 student/exercise
    pairs, 2 cannot be graded as submitted (...), 2 have no folder"."""
    def n(count: int, one: str, many: str) -> str:
        return f"{count} {one if count == 1 else many}"
    bad = sum(r.status == "not_graded" for r in rows)
    absent = sum(r.status == "missing" for r in rows)
    waiting = sum(r.status == "error" and r.reason.startswith("not graded:") for r in rows)
    broken = sum(r.status == "error" for r in rows) - waiting
    parts = [n(bad, "cannot be graded as submitted (the static checks found a problem)",
               "cannot be graded as submitted (the static checks found a problem in each)")]
    parts += [n(absent, "has no folder", "have no folder")] if absent else []
    parts += [n(waiting, "passed the static checks and needs a GPU", "passed the static checks and need a GPU")] \
        if waiting else []
    parts += [n(broken, "was not checked (its exercise's spec does not load)",
                "were not checked (their exercise's spec does not load)")] if broken else []
    return f"Of {n(len(rows), 'student/exercise pair', 'student/exercise pairs')}, " + ", ".join(parts)


def _batch_table(console: Console, rows: list, out_dir: Path, missing: list) -> None:  # type: ignore[type-arg]
    """The batch's table of results, and where they are."""
    from rich.table import Table
    t = Table(show_edge=False)
    for col in ("student", "exercise", "status", "score", "correct", "speed", "flags", "reused"):
        t.add_column(col)
    for row in rows:
        status = f"[red]{row.status}[/]" if row.status in ("missing", "error") else row.status
        t.add_row(row.student, row.exercise, status, "-" if row.score is None else f"{row.score:g}", "yes" if row.correct else "no",
                  f"{row.speed:.2f}" if row.speed else "-", str(row.flags), "yes" if row.reused else "")
    console.print(t)
    from grader.batch import FAST_P, exercise_summaries
    per = Table(show_edge=False, title="per exercise")
    for col in ("exercise", "n", "pending", "graded", "correct", "median", "fastest", *(f"p={p:g}" for p in FAST_P)):
        per.add_column(col, no_wrap=True)
    for e in exercise_summaries(rows):
        per.add_row(e.exercise.split("_")[0], str(e.submissions), str(e.pending), str(e.graded), str(e.correct),
                    "-" if e.median_score is None else f"{e.median_score:g}",
                    "-" if e.fastest is None else f"{e.fastest:.2f}x",
                    *("-" if v is None else f"{v:.0%}" for v in e.fast_p.values()))
    console.print(per)
    console.print("n: submissions with a result (a missing folder counts as 0); pending: grades that could not run "
                  "here. p=...: fast_p (KernelBench), the share of the n that are correct and at least p times as fast "
                  "as the reference; '-' while rows are pending or a correct one has no reference time", highlight=False)
    console.print(f"{len(rows)} results in {out_dir} (summary.csv, summary.json, index.html; one line per "
                  f"finished grade in batch.log)")
    if missing:
        console.print(f"[yellow]{len(missing)} student/exercise pair(s) had no folder: status 'missing', score 0[/]")


def _batch_exit(rows: list, fail_under: float | None) -> None:  # type: ignore[type-arg]
    """Exit 4 when a grade could not run, 1 when a score is below --fail-under, else 0."""
    if any(row.status == "error" for row in rows):
        sys.exit(EXIT_ERROR)
    if fail_under is not None and any((row.score or 0.0) < fail_under for row in rows):
        sys.exit(EXIT_BELOW)
    sys.exit(EXIT_OK)


def _shared_reference_times(root: Path, exs, out_dir: Path, info) -> Path | None:  # type: ignore[no-untyped-def]
    """Time each exercise's reference once for the whole batch (reused when resuming)."""
    from grader import calibrate as cal
    from grader.calibration import calibration_path, write_calibration
    from grader.grade import versions

    path = out_dir / f"reference-times-{info.arch}.toml"
    if path.is_file():
        return path
    with_solutions = [ex for ex in exs if (ex.solution / "solution.py").is_file()]
    if not with_solutions:
        fallback = calibration_path(root, info.arch)
        return fallback if fallback.is_file() else None
    results = cal.calibrate_all(with_solutions, _gpu_grader(root, info))
    write_calibration(path, cal.meta(info, versions(info)), cal.entries(results, keep_refused=True))
    return path


if __name__ == "__main__":
    main()
