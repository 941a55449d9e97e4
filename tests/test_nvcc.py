"""Every .cu file in the repository compiles with nvcc for sm_80, sm_89 and sm_90 (a cheat's kernel
parts joined into its kernel.cu, as conftest.cheat_submission builds it, rather than each part)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import CHEATS, ROOT, SHARED_KERNELS, cheat_kernel_parts, cheat_submission

KNOWN_GAPS = ROOT / "tests" / "known_gaps"   # cheats kept for the record, some deliberately uncompilable
# Virtual environments made inside the checkout (`python3 -m venv v`, as the README's set-up may be
# done) hold installed packages' .cu files (CuPy's): not the course's.
VENVS = [p.parent for p in ROOT.glob("*/pyvenv.cfg")]
ASSEMBLED = sorted(p.parent for p in CHEATS.glob("*/*/cheat.toml") if cheat_kernel_parts(p.parent))
PARTS = {*SHARED_KERNELS.glob("*.cu"), *(part for f in ASSEMBLED for part in cheat_kernel_parts(f))}
CU_FILES = sorted(p for p in ROOT.rglob("*.cu")
                  if not any(part.startswith(".") or part == "site-packages" for part in p.relative_to(ROOT).parts)
                  and not p.is_relative_to(KNOWN_GAPS) and not any(p.is_relative_to(v) for v in VENVS)
                  and p not in PARTS
                  and "__global__" in p.read_text(errors="replace"))  # skips the CPU-only fakes' empty files
ARCHES = ["sm_80", "sm_89", "sm_90"]


def test_there_are_kernels_to_compile():
    assert len(CU_FILES) >= 6


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("path", CU_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_compiles(path, arch, tmp_path):
    _nvcc(path, arch, tmp_path)


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("folder", ASSEMBLED, ids=lambda p: str(p.relative_to(ROOT)))
def test_assembled_cheat_kernels_compile(folder, arch, tmp_path):
    kernel = cheat_submission(folder, tmp_path) / "kernel.cu"
    if "__global__" in kernel.read_text():   # a host cheat's empty kernel has nothing to compile
        _nvcc(kernel, arch, tmp_path)


def _nvcc(path, arch, tmp_path):  # type: ignore[no-untyped-def]
    """nvcc compiles ``path`` to a cubin for ``arch``. A file that needs options (as its solution.py
    passes them to load) names them on a line "// nvcc-options: -DNAME=VALUE ..."."""
    extra = [o for line in path.read_text(errors="replace").splitlines() if line.startswith("// nvcc-options:")
             for o in line.split(":", 1)[1].split()]
    proc = subprocess.run([shutil.which("nvcc"), f"-arch={arch}", "-std=c++17", *extra, "-cubin", "-o",
                           str(tmp_path / "k.cubin"), str(path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def _grading_folders():
    """Every folder grading compiles: the solutions, the student templates and the GPU fixtures."""
    out = []
    for base in (ROOT / "solutions", ROOT / "student_template", ROOT / "tests" / "fixtures" / "gpu"):
        for folder in sorted(p for p in base.iterdir() if (p / "kernel.cu").is_file()):
            name = next((e.name for e in (ROOT / "exercises").iterdir() if folder.name.startswith(e.name)), None)
            if name is not None:
                out.append((name, folder))
    return out


@pytest.mark.parametrize("exercise, folder", _grading_folders(), ids=lambda x: getattr(x, "name", x))
def test_compiles_with_nvrtc_as_grading_does(exercise, folder):
    """kernel.cu through NVRTC with the exercise's options, as the worker compiles it (nvcc above
    is more forgiving: it defines INFINITY, say, which NVRTC does not)."""
    from grader.spec import load_spec
    from grader.static import nvrtc_unavailable, static_report
    why = nvrtc_unavailable()
    if why:
        pytest.skip(f"NVRTC cannot be loaded here: {why}")
    rep = static_report(load_spec(ROOT / "exercises" / exercise / "spec.toml"), folder, "sm_90")
    assert rep.compiled, rep.problems
    assert not [p for p in rep.problems if "error" in p], rep.problems
