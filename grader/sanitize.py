"""``grade EX --sanitize``: run one case under NVIDIA compute-sanitizer, one tool at a time, and
read its report back as small records mapped to ``kernel.cu:LINE``.

What it owns: choosing the case (:func:`sanitize_case`), building the command, running it with a
time limit, parsing the log, and the report's lines (:func:`report_lines`). What runs under
the sanitizer is :mod:`grader.sanitize_run` (load the spec, build the case's inputs in exact-size
arrays with CuPy's pool off, compile with ``-lineinfo``, call ``solve`` once); it writes a small
JSON status file next to the log. Submission code never runs in this process.

The log format read here is compute-sanitizer's (2020.1 to 2026.x), every line prefixed with
``=========``: a headline (``Invalid __global__ read of size 4 bytes``, ``Error: Race reported
between Write access at K+0x90 in F:13``, ``Uninitialized __global__ memory read of size 4 bytes``,
``Barrier error detected. Divergent thread(s) in warp.``, ``Program hit cudaError...``), indented
detail lines (``at K+0x1b0 in F:12``, ``by thread (255,0,0) in block (0,0,0)``, ``and Read access
at ...``), and a summary (``ERROR SUMMARY: 1 error`` or ``RACECHECK SUMMARY: 1 hazard displayed
(1 error, 0 warnings)``). The older ``at 0x1b0 in F:12:K`` location form is read too.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

if TYPE_CHECKING:
    from grader.spec import Spec

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
MEMCHECK_PADDING = 512   # bytes of red zone memcheck adds after each allocation
PRINT_LIMIT = 20                # errors compute-sanitizer prints per run
CUDA_BIN = Path("/usr/local/cuda/bin")
TIMEOUT_FACTOR, TIMEOUT_EXTRA_S = 20, 60.0  # sanitizer runs are slow: case_s * 20 + compile_s + 60 s
OUTPUT_LIMIT_BYTES = 16 * 1024 * 1024
TAIL_LINES = 30

MISSING = ("compute-sanitizer not found (looked on PATH, in /usr/local/cuda/bin and $CUDA_HOME/bin); fix: install "
           "the CUDA toolkit's compute-sanitizer (e.g. apt install cuda-sanitizer-<version>) or put its folder on PATH")


# -- records ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SanitizerFinding:
    """One reported error: ``kind`` is the headline (``Invalid __global__ read of size 4 bytes``,
    ``Race reported between Write access and Read access``...), ``kernel`` the kernel's name without
    its parameters, ``file``/``line`` the source location mapped to the submission's file name
    (``kernel.cu``; empty/None without line information), ``message`` the detail lines joined with
    "; ", ``severity`` "error" or "warning", ``repeats`` how many printed reports were identical
    but for the thread."""
    tool: str
    kind: str
    kernel: str
    file: str
    line: int | None
    message: str
    severity: str = "error"
    repeats: int = 1

    @property
    def where(self) -> str:
        """``kernel.cu:12 in vector_add``, or just the kernel when there is no line information."""
        if self.file and self.line is not None:
            return f"{self.file}:{self.line}" + (f" in {self.kernel}" if self.kernel else "")
        return f"in {self.kernel}" if self.kernel else "(no location)"


@dataclass(frozen=True)
class SanitizerReport:
    """One tool's run: ``status`` "ok" (ran to the end), "timeout" or "failed" (the tool or the
    runner could not run the case; ``message`` says why); ``error_count`` from the summary line;
    ``not_printed`` errors beyond the print limit; ``note`` what the run itself said (e.g. that
    ``solve`` raised after an invalid access); ``raw_tail`` the end of the log."""
    tool: str
    findings: tuple[SanitizerFinding, ...]
    error_count: int
    raw_tail: str
    status: str = "ok"
    message: str = ""
    note: str = ""
    not_printed: int = 0
    seconds: float = 0.0

    @property
    def clean(self) -> bool:
        return self.status == "ok" and self.error_count == 0 and not self.findings


@dataclass(frozen=True)
class RunContext:
    """What the runner reported about the process: the submission's source files (in load order)
    with the kernels each declares, and every argument's allocation (name, base pointer, bytes)."""
    sources: tuple[tuple[str, tuple[str, ...]], ...] = (("kernel.cu", ()),)
    allocations: tuple[tuple[str, int, int], ...] = ()
    ok: bool = True
    stage: str = ""
    message: str = ""

    @staticmethod
    def from_json(d: dict[str, Any]) -> "RunContext":
        sources = tuple((str(s["file"]), tuple(s.get("kernels", ()))) for s in d.get("sources", ())) or \
            (("kernel.cu", ()),)
        allocs = tuple((str(a["name"]), int(a["ptr"]), int(a["bytes"])) for a in d.get("allocations", ()))
        return RunContext(sources, allocs, bool(d.get("ok", False)), str(d.get("stage", "")),
                          str(d.get("message", "")))


# -- finding the tool -------------------------------------------------------------------------------
def find_tool(name: str, env: dict[str, str] | None = None) -> str | None:
    """A CUDA toolkit program's path (compute-sanitizer, ncu): on PATH, then in /usr/local/cuda/bin,
    then in $CUDA_HOME/bin; None when it is in none of them."""
    env = dict(os.environ) if env is None else env
    found = shutil.which(name, path=env.get("PATH", ""))
    if found:
        return found
    dirs = [CUDA_BIN] + ([Path(env["CUDA_HOME"]) / "bin"] if env.get("CUDA_HOME") else [])
    for d in dirs:
        p = d / name
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def find_sanitizer(env: dict[str, str] | None = None) -> str | None:
    """compute-sanitizer's path (see :func:`find_tool`)."""
    return find_tool("compute-sanitizer", env)


def parse_tools(text: str) -> tuple[str, ...]:
    """``"memcheck,racecheck"`` -> the tools in that order. Raises ValueError naming a bad one."""
    tools = tuple(dict.fromkeys(t.strip().lower() for t in text.split(",") if t.strip()))
    bad = [t for t in tools if t not in TOOLS]
    if bad or not tools:
        raise ValueError(f"{', '.join(bad) or repr(text)}: not a compute-sanitizer tool; choose from {', '.join(TOOLS)}")
    return tools


def timeout_for(case_s: float, compile_s: float) -> float:
    """Seconds one tool's run may take."""
    return compile_s + TIMEOUT_FACTOR * case_s + TIMEOUT_EXTRA_S


def command(sanitizer: str, tool: str, log_file: Path, spec_path: Path, submission: Path, token: str,
            status_file: Path, python: str | None = None) -> list[str]:
    """The command line for one tool. ``--error-exitcode 0``: the exit status stays the runner's
    (the findings are read from the log); ``--show-backtrace no``: host frames would be CuPy's."""
    cmd = [sanitizer, "--tool", tool, "--print-limit", str(PRINT_LIMIT), "--error-exitcode", "0",
           "--launch-timeout", "120", "--show-backtrace", "no", "--log-file", str(log_file)]
    if tool == "racecheck":
        cmd += ["--racecheck-report", "analysis"]
    if tool == "memcheck":  # red zones after every allocation: cudaMalloc rounds sizes up, and a read
        cmd += ["--padding", str(MEMCHECK_PADDING)]  # just past the end would land in that slack
    return cmd + [python or sys.executable, "-P", "-m", "grader.sanitize_run", str(spec_path), str(submission),
                  token, "--status", str(status_file)]


# -- running ----------------------------------------------------------------------------------------
def environment() -> dict[str, str]:
    """The environment of a tool's run (sanitizer, profiler): the grader importable, no GRADER_
    variables (the grading secret), unbuffered output, no device debug code."""
    from grader.sandbox.supervisor import PACKAGE_PARENT
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("CUPY_CUDA_COMPILE_WITH_DEBUG", None)  # -G would change what the tools see
    return env


def limits() -> None:
    """In a tool's child before exec: a cap on the files it writes, no core dumps."""
    import resource
    resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_LIMIT_BYTES, OUTPUT_LIMIT_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_limited(cmd: list[str], cwd: Path, output: Path, timeout_s: float) -> tuple[bool, float]:
    """Run a tool's command (sanitizer, profiler) in a session of its own with :func:`environment`
    and :func:`limits`, its output into ``output``; killed with its whole session after
    ``timeout_s`` seconds. Returns (whether it timed out, seconds it took)."""
    t0 = time.perf_counter()
    timed_out = False
    with open(output, "wb") as sink:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT, cwd=cwd,
                                env=environment(), start_new_session=True, preexec_fn=limits)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=30)
    return timed_out, time.perf_counter() - t0


@contextlib.contextmanager
def work_folder(path: str) -> Iterator[int]:
    """A descriptor of the folder ``path`` (just made by the grader, before any tool runs), for
    :func:`read_back`; closed on exit. Raises OSError when it cannot be opened."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


def read_back(folder_fd: int, name: str, limit: int = OUTPUT_LIMIT_BYTES) -> str:
    """The text (at most ``limit`` bytes, decoding errors replaced) of the regular file ``name``
    in the folder ``folder_fd`` (see :func:`work_folder`); "" when it is missing, is not a regular
    file, or is a symbolic link. The submission runs as the grader's user and knows these paths
    (its own command line, its parent's): a file read by path could be its link to any file the
    grader can read (the grader's own /proc/self/environ, which holds GRADER_SECRET), shown in
    the report's tail. Through the folder's descriptor a renamed or replaced folder is no detour."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder_fd)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks).decode(errors="replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


def run_tool(sanitizer: str, tool: str, spec_path: Path, submission: Path, token: str, timeout_s: float,
             python: str | None = None) -> SanitizerReport:
    """Run one tool on one case and parse its log. Never raises for the submission's problems."""
    with tempfile.TemporaryDirectory(prefix="grade-sanitize-") as tmp, work_folder(tmp) as folder:
        work = Path(tmp)
        log, status, out = work / f"{tool}.log", work / "status.json", work / "output.txt"
        cwd = work / "cwd"
        cwd.mkdir()
        cmd = command(sanitizer, tool, log, Path(spec_path).resolve(), Path(submission).resolve(), token, status,
                      python)
        timed_out, seconds = run_limited(cmd, cwd, out, timeout_s)
        text = read_back(folder, log.name)
        output = read_back(folder, out.name)
        try:
            ctx = RunContext.from_json(json.loads(read_back(folder, status.name)))
            have_status = True
        except (OSError, ValueError, KeyError, TypeError, AttributeError):   # what the run wrote is untrusted
            ctx, have_status = RunContext(ok=False), False
    report = parse_report(tool, text, ctx)
    tail = "\n".join((text.strip() or output.strip()).splitlines()[-TAIL_LINES:])
    extra: dict[str, Any] = {"raw_tail": tail, "seconds": seconds}
    if timed_out:
        extra.update(status="timeout", message=f"{tool} did not finish within {timeout_s:g} s (the sanitizer slows "
                     "kernels 10-100x; try a smaller --case); what it printed before is shown")
    elif not have_status:
        why = _tool_error(text) or _last_line(output) or "it wrote no status and printed nothing"
        extra.update(status="failed", message=f"the sanitized run did not complete: {why}")
    elif not ctx.ok and ctx.stage in ("spec", "case", "load", "inputs"):
        extra.update(status="failed", message=f"{ctx.stage}: {ctx.message}")
    elif not ctx.ok:
        extra.update(note=f"solve raised: {ctx.message}")
    from dataclasses import replace
    return replace(report, **extra)


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def _tool_error(text: str) -> str:
    for raw in text.splitlines():
        body = raw[len(PREFIX):].strip() if raw.startswith(PREFIX) else ""
        if _TOOL_ERROR.match(body) and not _RACE.match(body) and not _HAZARD.match(body):
            return body
    return ""


def sanitize(sanitizer: str, tools: Sequence[str], spec_path: Path, submission: Path, token: str, timeout_s: float,
             on_tool: Any = None) -> list[SanitizerReport]:
    """Each tool in turn on the same case; ``on_tool(tool)`` is called before each run."""
    out = []
    for tool in tools:
        if on_tool is not None:
            on_tool(tool)
        out.append(run_tool(sanitizer, tool, spec_path, submission, token, timeout_s))
    return out


# -- parsing ----------------------------------------------------------------------------------------
PREFIX = "========="
_SUMMARY = re.compile(r"^ERROR SUMMARY: ([\d,]+) errors?\b(?! were not printed| was not printed)")
_NOT_PRINTED = re.compile(r"^ERROR SUMMARY: ([\d,]+) errors? (?:were|was) not printed")
_RACE_SUMMARY = re.compile(r"^RACECHECK SUMMARY: ([\d,]+) hazards? displayed(?: \(([\d,]+) errors?, ([\d,]+) warnings?\))?")
_RACE = re.compile(r"^(?:(?P<sev>Error|Warning|Info|ERROR|WARNING|INFO): )?Race reported between (?P<a>\w+) access at "
                   r"(?P<loc>.+?)(?: \[(?P<n>[\d,]+) hazards?\])?$")
_RACE_AND = re.compile(r"^and (?P<a>\w+) access at (?P<loc>.+?)(?: \[(?P<n>[\d,]+) hazards?\])?$")
_HAZARD = re.compile(r"^(?:(?P<sev>Error|Warning|Info|ERROR|WARNING|INFO): )?Potential (?P<h>\w+) hazard detected at "
                     r"(?P<space>\S+) (?P<addr>\S+) in block (?P<block>\([^)]*\))")
_HAZARD_THREAD = re.compile(r"^(?P<a>\w+) Thread (?P<t>\([^)]*\)) at (?P<loc>.+)$")
_TOOL_ERROR = re.compile(r"^(?:Error|ERROR|Internal Sanitizer Error|Warning|WARNING): ")
_AT = re.compile(r"^at (?P<loc>.+)$")
_LOC_NEW = re.compile(r"^(?P<kernel>.+?)\+0x[0-9a-fA-F]+(?: in (?P<file>.+):(?P<line>\d+))?$")
_LOC_OLD = re.compile(r"^0x[0-9a-fA-F]+ in (?:(?P<file>[^:]+):(?P<line>\d+):)?(?P<kernel>.+)$")
_ALLOC = re.compile(r"nearest allocation at (0x[0-9a-fA-F]+) of size ([\d,]+) bytes")
_NVRTC_NAME = re.compile(r"^(?:[0-9a-f]{16,}\.cubin\.cu|kern\.cu|default_program|)$")
_SKIP_HEADLINES = ("COMPUTE-SANITIZER", "CUDA-MEMCHECK", "Saved host backtrace", "Host Frame", "Device Frame")


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """(headline, detail lines) from the ``=========``-prefixed lines of a log."""
    blocks: list[tuple[str, list[str]]] = []
    current: tuple[str, list[str]] | None = None
    for raw in text.splitlines():
        if not raw.startswith(PREFIX):
            continue
        body = raw[len(PREFIX):].rstrip()
        if not body.strip():
            current = None
            continue
        if body.startswith(("  ", "\t")) and current is not None:
            current[1].append(body.strip())
            continue
        current = (body.strip(), [])
        blocks.append(current)
    return blocks


def _short_kernel(name: str) -> str:
    """``void reduce<8>(const float *, long long)`` -> ``reduce<8>``; ``vector_add`` stays."""
    name = name.strip()
    depth, cut = 0, len(name)
    for i, ch in enumerate(name):  # the parameter list: the first "(" outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
    name = name[:cut].strip()
    return re.sub(r"^(?:static\s+)?void\s+", "", name)


class _Mapper:
    """Source locations as the submission names them: NVRTC compiles the source under a
    temporary name (CuPy: ``/tmp/tmpXXXX/<hash>.cubin.cu``; ``default_program`` when compiled in
    memory); CuPy passes the source unchanged (no lines prepended), so only the name changes."""

    def __init__(self, ctx: RunContext):
        self.ctx = ctx
        self.names = {name for name, _ in ctx.sources}

    def file(self, reported: str, kernel: str) -> str:
        base = reported.replace("\\", "/").rsplit("/", 1)[-1]
        if base in self.names:
            return base
        if _NVRTC_NAME.match(base):
            plain = re.sub(r"<.*", "", kernel)
            owners = [name for name, kernels in self.ctx.sources if plain in kernels]
            if len(owners) == 1:
                return owners[0]
            if len(self.ctx.sources) == 1:
                return self.ctx.sources[0][0]
        return reported

    def location(self, loc: str) -> tuple[str, str, int | None]:
        """(kernel, file, line) of ``K+0x1b0 in F:12`` / ``K+0x1b0`` / ``0x1b0 in F:12:K``."""
        loc = loc.strip()
        m = _LOC_OLD.match(loc) or _LOC_NEW.match(loc)
        if not m:
            return "", "", None
        kernel = _short_kernel(m["kernel"])
        if not m["file"]:
            return kernel, "", None
        return kernel, self.file(m["file"], kernel), int(m["line"])

    def text(self, loc: str) -> str:
        kernel, f, line = self.location(loc)
        if f and line is not None:
            return f"{f}:{line}"
        return kernel or loc

    def allocation(self, detail: str) -> str:
        m = _ALLOC.search(detail)
        if not m:
            return detail
        base = int(m[1], 16)
        for name, ptr, nbytes in self.ctx.allocations:
            if ptr == base:
                return f"{detail} (argument {name!r}, {nbytes} bytes)"
        return detail


def _num(s: str | None) -> int:
    return int(s.replace(",", "")) if s else 0


def parse_report(tool: str, text: str, ctx: RunContext | None = None) -> SanitizerReport:
    """The findings of one compute-sanitizer log (identical reports from several threads merged,
    in the order first printed), the summary's error count and the log's tail."""
    mapper = _Mapper(ctx or RunContext())
    raw: list[SanitizerFinding] = []
    count: int | None = None
    not_printed = 0
    for head, details in _blocks(text):
        if head.startswith(_SKIP_HEADLINES):
            continue
        m = _NOT_PRINTED.match(head)
        if m:
            not_printed = _num(m[1])
            continue
        m = _SUMMARY.match(head)
        if m:
            count = (count or 0) + _num(m[1])
            continue
        m = _RACE_SUMMARY.match(head)
        if m:
            count = (count or 0) + (_num(m[2]) + _num(m[3]) if m[2] is not None else _num(m[1]))
            continue
        m = _RACE.match(head)
        if m:
            raw.append(_race(tool, m, details, mapper))
            continue
        m = _HAZARD.match(head)
        if m:
            raw.append(_hazard(tool, m, details, mapper))
            continue
        if _TOOL_ERROR.match(head):
            continue  # the tool's own trouble (no process attached...): see run_tool's status
        raw.append(_generic(tool, head, details, mapper))
    findings = _merge(raw)
    tail = "\n".join(text.strip().splitlines()[-TAIL_LINES:])
    return SanitizerReport(tool, tuple(findings), count if count is not None else len(raw), tail,
                           not_printed=not_printed)


def _severity(word: str | None) -> str:
    return "warning" if word and word.lower().startswith(("warn", "info")) else "error"


def _race(tool: str, m: re.Match, details: list[str], mapper: _Mapper) -> SanitizerFinding:
    kernel, f, line = mapper.location(m["loc"])
    accesses = [f"{m['a']} access at {mapper.text(m['loc'])}" + (f" [{m['n']} hazards]" if m["n"] else "")]
    others, rest = [], []
    for d in details:
        a = _RACE_AND.match(d)
        if a:
            others.append(a["a"])
            accesses.append(f"{a['a']} access at {mapper.text(a['loc'])}" + (f" [{a['n']} hazards]" if a["n"] else ""))
        else:
            rest.append(d)
    kind = f"Race reported between {m['a']} access" + (f" and {others[0]} access" if others else "")
    message = " and ".join(accesses) + ("; " + "; ".join(rest) if rest else "")
    return SanitizerFinding(tool, kind, kernel, f, line, message, _severity(m["sev"]))


def _hazard(tool: str, m: re.Match, details: list[str], mapper: _Mapper) -> SanitizerFinding:
    kernel, f, line = "", "", None
    parts = [f"at {m['space']} {m['addr']} in block {m['block']}"]
    for d in details:
        t = _HAZARD_THREAD.match(d)
        if t:
            k, ff, ln = mapper.location(t["loc"])
            if not kernel and (k or ff):
                kernel, f, line = k, ff, ln
            parts.append(f"{t['a']} by thread {t['t']} at {mapper.text(t['loc'])}")
        else:
            parts.append(d)
    return SanitizerFinding(tool, f"Potential {m['h']} hazard", kernel, f, line, "; ".join(parts), _severity(m["sev"]))


def _generic(tool: str, head: str, details: list[str], mapper: _Mapper) -> SanitizerFinding:
    kernel, f, line = "", "", None
    parts = []
    for d in details:
        a = _AT.match(d)
        if a and not kernel and not f:
            kernel, f, line = mapper.location(a["loc"])
            if kernel or f:
                continue
        parts.append(mapper.allocation(d))
    return SanitizerFinding(tool, head.rstrip("."), kernel, f, line, "; ".join(parts))


def _merge(findings: list[SanitizerFinding]) -> list[SanitizerFinding]:
    """Reports that differ only in the thread/block (synccheck prints one per thread) become one."""
    from dataclasses import replace
    out: list[SanitizerFinding] = []
    index: dict[tuple[Any, ...], int] = {}
    for f in findings:
        key = (f.kind, f.kernel, f.file, f.line, f.severity,
               re.sub(r"\(\d+,\d+,\d+\)|0x[0-9a-fA-F]+|\d+ bytes (?:after|before)", "#", f.message))
        if key in index:
            k = index[key]
            out[k] = replace(out[k], repeats=out[k].repeats + 1)
        else:
            index[key] = len(out)
            out.append(f)
    return out


# -- presenting -------------------------------------------------------------------------------------
def to_dict(r: SanitizerReport) -> dict[str, Any]:
    from dataclasses import asdict
    d = asdict(r)
    d["clean"] = r.clean
    return d


def summary_line(r: SanitizerReport) -> str:
    """``memcheck: 2 errors``, ``racecheck: clean``, ``initcheck: timed out``..."""
    if r.status == "timeout":
        return f"{r.tool}: timed out"
    if r.status == "failed":
        return f"{r.tool}: could not run"
    if r.clean:
        return f"{r.tool}: clean"
    n = max(r.error_count, len(r.findings))
    return f"{r.tool}: {n} error{'s' if n != 1 else ''}"


# Under compute-sanitizer a kernel runs 10 to 100 times slower (racecheck most), so the edge case
# re-run when nothing failed is the largest one within these caps: total elements over all arrays
# and the product of the dims (the work of a GEMM). Large enough for many warps and blocks (a race
# between warps or blocks cannot show in a 1 x 1 case), small enough to finish in seconds.
SANITIZE_MAX_ELEMENTS = 2**24
SANITIZE_MAX_WORK = 2**24


def pick_edge_case(spec, edges):  # type: ignore[no-untyped-def]
    """(token, why) of the edge case to sanitize when no case failed: the largest (by elements over
    all arrays, then by the product of the dims) within :data:`SANITIZE_MAX_ELEMENTS` and
    :data:`SANITIZE_MAX_WORK`, preferring cases with no dim of 1 (a 1 x n transpose is a copy);
    the smallest edge case when none fits."""
    from grader.spec import elements
    fits = [c for c in edges if elements(spec, c.dim_dict) <= SANITIZE_MAX_ELEMENTS and c.size() <= SANITIZE_MAX_WORK]
    if not fits:
        c = min(edges, key=lambda c: (elements(spec, c.dim_dict), c.size()))
        return c.token, (f"no case failed, and no edge case is within the sanitizer's size cap "
                         f"(2^24 elements and dims product), so the smallest one ({c.describe(spec)})")
    c = max(fits, key=lambda c: (1 not in c.dim_dict.values(), elements(spec, c.dim_dict), c.size()))
    return c.token, (f"no case failed, so the largest edge case within the sanitizer's size cap (2^24 elements "
                     f"and dims product), for many warps and blocks: {c.describe(spec)}")


def sanitize_case(spec: Spec, result: Any, mode: str, seed: int, secret: str | None,
                  case_token: str | None) -> tuple[str | None, str]:
    """(token, why it was chosen) of the case to sanitize: --case, else the smallest failing case,
    else the largest edge case under the sanitizer's size cap (see :func:`pick_edge_case`);
    (None, why) when there is none."""
    from grader.cases import PROFILES, combine_seed, edge_cases
    if case_token:
        return case_token, "the case given with --case"
    small = result.smallest_failure
    if small is not None and small.token:
        return small.token, f"the smallest failing case ({small.description}: {small.status})"
    edges = edge_cases(spec, PROFILES[mode], combine_seed(seed, secret))
    if edges:
        return pick_edge_case(spec, edges)
    return None, "no case failed and the spec has no edge cases; pass --case TOKEN"


SANITIZE_SHOWN = 3  # findings shown per tool


def report_lines(reports: Sequence[SanitizerReport]) -> list[str]:
    """The sanitizer section of a text report, as rich markup lines (the first SANITIZE_SHOWN
    findings of each tool)."""
    from rich.markup import escape
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
