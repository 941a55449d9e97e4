"""ex17_flash_attention_hopper, checked without a GPU: its spec and oracle stay ex14's (only the
exercise's name, the target, the required instruction and the performance section may differ), the
reference compiles with NVRTC for sm_90a as grading compiles (no spills, registers within the
setmaxnreg budget, shared memory within 227 KB, wgmma and the TMA in the PTX), and grade
--compile-only's static checks pass for the reference and the student template. Nothing here runs a
kernel (the GPU: tests/test_gpu.py grades it)."""
from __future__ import annotations

import ast
import tomllib

import pytest

from tests.conftest import ROOT
from tests.draft_kernels import nvrtc_compile

EXERCISE = ROOT / "exercises" / "ex17_flash_attention_hopper"
EX14 = ROOT / "exercises" / "ex14_flash_attention"
SOLUTION = ROOT / "solutions" / "ex17_flash_attention_hopper"
TEMPLATE = ROOT / "student_template" / "ex17_flash_attention_hopper"
ARCH = "sm_90a"
THREADS = 384
REG_BUDGET = (65536 // THREADS) // 8 * 8          # 168: what a 384-thread CTA may start with
SMEM_LIMIT = 227 * 1024                            # dynamic shared memory per block on sm_90
# the spec's parts that may differ from ex14's: (section, key)
MAY_DIFFER = {("exercise", "name"), ("exercise", "title"), ("features", "arch"), ("features", "required_ptx")}
# and the whole [performance] section


def _code_without_docstring(path) -> str:
    tree = ast.parse(path.read_text())
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return ast.dump(ast.Module(body=body, type_ignores=[]))


def test_oracle_is_ex14s():
    assert _code_without_docstring(EXERCISE / "reference.py") == _code_without_docstring(EX14 / "reference.py")


def test_spec_is_ex14s_but_for_target_instruction_and_performance():
    ours = tomllib.loads((EXERCISE / "spec.toml").read_text())
    theirs = tomllib.loads((EX14 / "spec.toml").read_text())
    assert ours.keys() == theirs.keys()
    for section in ours:
        if section == "performance":
            continue
        a, b = ours[section], theirs[section]
        if isinstance(a, dict):
            keys = (a.keys() | b.keys()) - {k for s, k in MAY_DIFFER if s == section}
            assert {k: a.get(k) for k in keys} == {k: b.get(k) for k in keys}, section
        else:
            assert a == b, section
    assert ours["features"]["arch"] == ARCH
    assert ours["features"]["required_ptx"] == ["wgmma\\.mma_async"]


@pytest.fixture(scope="module")
def nvrtc_build():
    """(ptxas log, cubin, PTX) of the reference's kernel.cu compiled by NVRTC for sm_90a."""
    return nvrtc_compile(SOLUTION / "kernel.cu", ARCH)


def test_reference_resources_within_budget(nvrtc_build):
    from grader.static import _parse_ptxas
    log, _cubin, ptx = nvrtc_build
    kernels = {k.name: k for k in _parse_ptxas(log)}
    attention = [k for name, k in kernels.items() if name.startswith("fa3")]
    assert attention, log
    for k in attention:
        assert k.spill_store_bytes == 0 and k.spill_load_bytes == 0 and k.stack_bytes == 0, k
        assert k.registers <= REG_BUDGET, k
    assert not [ln for ln in log.splitlines() if "warning" in ln.lower()], log
    assert "wgmma.mma_async" in ptx and "cp.async.bulk.tensor" in ptx and "setmaxnreg" in ptx


def test_dynamic_shared_memory_fits():
    """Every kernel variant's dynamic shared memory (solution.py's _smem over its _STAGES; the
    module itself is not imported: loading kernel.cu needs a GPU) fits one sm_90 block."""
    tree = ast.parse((SOLUTION / "solution.py").read_text())
    wanted = [n for n in tree.body if (isinstance(n, ast.FunctionDef) and n.name == "_smem")
              or (isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "_STAGES" for t in n.targets))]
    ns: dict = {}
    exec(compile(ast.Module(body=wanted, type_ignores=[]), "solution.py", "exec"), ns)
    assert ns["_STAGES"]
    for variant in ns["_STAGES"]:
        for d in (64, 128):
            assert ns["_smem"](d, variant) <= SMEM_LIMIT, (variant, d)


def test_static_report_of_the_reference_and_the_stub():
    """grade --compile-only's checks (sm_90a): both compile and pass solve's signature, imports,
    kernel names and forbidden patterns; the required PTX (wgmma.mma_async) is in the reference's,
    not in the stub's."""
    from grader.spec import load_spec
    from grader.static import nvrtc_unavailable, static_report
    why = nvrtc_unavailable()
    if why:
        pytest.skip(f"NVRTC cannot be loaded here: {why}")
    spec = load_spec(EXERCISE / "spec.toml")
    rep = static_report(spec, SOLUTION, ARCH)
    assert rep.compiled and not rep.problems and not rep.warnings, (rep.problems, rep.warnings)
    stub = static_report(spec, TEMPLATE, ARCH)
    assert stub.compiled, stub.problems
    assert not stub.problems and any("wgmma" in w for w in stub.warnings), (stub.problems, stub.warnings)
