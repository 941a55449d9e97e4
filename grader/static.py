"""What can be checked without a GPU: compile ``kernel.cu`` with nvcc (errors as ``kernel.cu:LINE``,
registers / shared memory / spills per kernel from ``-Xptxas -v``), parse ``solution.py`` and look
for ``solve`` with the right number of arguments, and the spec's required/forbidden features."""
from __future__ import annotations

import ast
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader.kernel import parse_compiler_log
from grader.spec import Spec

_PTXAS_FUNC = re.compile(r"Compiling entry function '(\w+)' for '(sm_\w+)'")
_PTXAS_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")
_PTXAS_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


@dataclass(frozen=True)
class StaticKernel:
    """ptxas's report for one kernel: registers per thread, static shared memory per block (bytes),
    stack frame and spill bytes per thread."""
    name: str
    registers: int
    shared_bytes: int
    stack_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int


@dataclass(frozen=True)
class StaticReport:
    """Problems (each one line, naming file and line where known), per-kernel resources, what
    could not be checked here, and warnings (graded, but at a cost: e.g. no performance points)."""
    problems: tuple[str, ...]
    kernels: tuple[StaticKernel, ...]
    skipped: tuple[str, ...]
    arch: str
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


def nvcc_path() -> str | None:
    return shutil.which("nvcc")


def compile_with_nvcc(source: Path, arch: str, options: tuple[str, ...] = ()) -> tuple[list[str], list[StaticKernel]]:
    """Compile ``source`` to a cubin for ``arch`` (e.g. "sm_90") with ``-Xptxas -v``.

    Returns (problems as ``kernel.cu:LINE: error: msg`` lines, kernels). Raises FileNotFoundError
    when nvcc is not on PATH.
    """
    nvcc = nvcc_path()
    if nvcc is None:
        raise FileNotFoundError("nvcc is not on PATH")
    opts = [o for o in options if not o.startswith(("-arch", "--gpu-architecture"))]
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nvcc, f"-arch={arch}", "-cubin", "-Xptxas", "-v", *opts, "-o", str(Path(tmp) / "k.cubin"), str(source)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    log = (proc.stdout + proc.stderr).replace(str(source), source.name)
    diags = parse_compiler_log(log, source.name)
    problems = [f"{source.name}:{ln}: {kind}: {msg}" for ln, kind, msg in diags if kind != "warning"]
    # the host preprocessor reports missing includes gcc-style: kernel.cu:3:10: fatal error: x.h: No such file
    problems += [f"{source.name}:{m[1]}: {m[2]}" for m in re.finditer(r"^\S*?:(\d+):\d+: ((?:fatal )?error: .*)$",
                                                                      log, flags=re.M)]
    if proc.returncode != 0 and not problems:
        lines = [ln for ln in log.strip().splitlines() if ln.strip()]
        problems = [f"{source.name}: nvcc failed: {' / '.join(lines[-3:]) if lines else proc.returncode}"]
    return problems, _parse_ptxas(log)


def ptx_of(source: Path, options: tuple[str, ...], arch: str) -> str | None:
    """The PTX of ``source`` for ``arch`` (e.g. "sm_90"), compiled with nvcc when it is on PATH,
    else with NVRTC through CuPy; None when neither is available or the source does not compile
    (the compile error is reported elsewhere)."""
    virtual = "compute_" + arch.removeprefix("sm_")
    opts = [o for o in options if not o.startswith(("-arch", "--gpu-architecture"))]
    nvcc = nvcc_path()
    if nvcc is not None:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "k.ptx"
            proc = subprocess.run([nvcc, f"-arch={virtual}", "-ptx", *opts, "-o", str(out), str(source)],
                                  capture_output=True, text=True, timeout=300)
            return out.read_text() if proc.returncode == 0 and out.is_file() else None
    try:
        from cupy_backends.cuda.libs import nvrtc
        prog = nvrtc.createProgram(source.read_text(), source.name, [], [])
        try:
            nvrtc.compileProgram(prog, [f"-arch={virtual}", *opts])
            return nvrtc.getPTX(prog).decode() if isinstance(nvrtc.getPTX(prog), bytes) else nvrtc.getPTX(prog)
        finally:
            nvrtc.destroyProgram(prog)
    except Exception:  # no CuPy/NVRTC here, or the source does not compile
        return None


def _parse_ptxas(log: str) -> list[StaticKernel]:
    kernels: list[StaticKernel] = []
    name, stack = None, (0, 0, 0)
    for line in log.splitlines():
        m = _PTXAS_FUNC.search(line)
        if m:
            name = m.group(1)
            continue
        m = _PTXAS_PROPS.search(line)
        if m:
            stack = tuple(int(x) for x in m.groups())  # type: ignore[assignment]
            continue
        m = _PTXAS_USED.search(line)
        if m and name:
            smem = int(m.group(2) or 0)
            kernels.append(StaticKernel(name, int(m.group(1)), smem, *stack))
            name, stack = None, (0, 0, 0)
    return kernels


def check_solution_py(path: Path, nargs: int) -> list[str]:
    """Problems with ``solution.py``: syntax, a module it imports that is not installed, no
    ``solve``, or a ``solve`` that cannot take ``nargs`` arguments."""
    import importlib.util
    try:
        tree = ast.parse(path.read_text(errors="replace"), filename=path.name)
    except SyntaxError as exc:
        return [f"solution.py:{exc.lineno}: syntax error: {exc.msg}"]
    problems = []
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
        for name in names:
            top = name.split(".")[0]
            if importlib.util.find_spec(top) is None:
                problems.append(f"solution.py:{node.lineno}: imports {name!r}, which is not installed here")
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "solve":
            a = node.args
            positional = len(a.posonlyargs) + len(a.args)
            required = positional - len(a.defaults)
            if a.vararg is None and positional < nargs or required > nargs:
                problems.append(f"solution.py:{node.lineno}: solve takes {positional} positional arguments; "
                                f"the exercise passes {nargs} (inputs then outputs)")
            return problems
    return problems + ["solution.py: defines no function solve(*inputs, *outputs)"]


def check_kernel_names(kernel: Path, solution: Path) -> list[str]:
    """Problems between kernel.cu and the names solution.py asks for: no kernel at all, kernels
    that are not ``extern "C"`` (get_function cannot find a C++-mangled name), and literal
    ``get_function("name")`` calls for a kernel kernel.cu does not declare."""
    from grader.kernel import kernel_names
    source = kernel.read_text(errors="replace")
    declared = kernel_names(source)
    if not declared:
        return ["kernel.cu: declares no __global__ kernel"]
    problems = []
    if 'extern "C"' not in source:
        problems.append('kernel.cu: its kernels are not declared extern "C", so get_function cannot find them by '
                        'name; fix: write extern "C" __global__ void ...')
    text = solution.read_text(errors="replace")
    for m in re.finditer(r"get_function\(\s*[\"'](\w+)[\"']\s*\)", text):
        if m.group(1) not in declared:
            line = text[:m.start()].count("\n") + 1
            problems.append(f"solution.py:{line}: get_function({m.group(1)!r}) but kernel.cu declares "
                            f"{', '.join(declared)}")
    return problems


def static_report(spec: Spec, submission: Path, arch: str = "sm_90") -> StaticReport:
    """Everything that can be checked without a GPU; see the module docstring."""
    from grader.grade import static_check  # the grader's own submission checks

    problems, kernels, skipped = [], [], []
    bad = static_check(spec, submission)
    if bad and bad[0] == "bad_submission":
        return StaticReport((bad[1],), (), (), arch)
    if bad:
        problems.append(bad[1])
    problems += check_solution_py(submission / "solution.py", len(spec.arg_order))
    problems += check_kernel_names(submission / "kernel.cu", submission / "solution.py")
    if nvcc_path() is None:
        skipped.append("compiling kernel.cu (nvcc is not on PATH; install the CUDA toolkit to check it here)")
    else:
        errs, kernels = compile_with_nvcc(submission / "kernel.cu", arch, spec.compile_options)
        problems += errs
    warnings = []
    if spec.required_ptx and not problems:
        ptx = ptx_of(submission / "kernel.cu", spec.compile_options, arch)
        missing = [p for p in spec.required_ptx if ptx is not None and not re.search(p, ptx)]
        warnings += [f"kernel.cu: its PTX has no instruction matching {p!r} ([features] required_ptx): it would "
                     f"score no performance points" for p in missing]
    skipped.append("running the kernel (correctness and timing need a GPU)")
    return StaticReport(tuple(problems), tuple(kernels), tuple(skipped), arch, tuple(warnings))
