"""Shared fixtures: the course root, spec loading, GPU/nvcc skips, a direct grade helper, and the
cheat corpus's submission folders."""
from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from grader.calibration import Calibration, load_calibration
from grader.cases import PROFILES, Profile
from grader.grade import GradeOptions, GradeResult, grade
from grader.spec import Spec, load_spec
from grader.timing import StopPolicy

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _gpu_reason() -> str | None:
    from grader.device import unavailable_reason
    return unavailable_reason()


def pytest_collection_modifyitems(config, items):  # noqa: ANN001
    no_gpu = _gpu_reason()
    no_nvcc = shutil.which("nvcc") is None
    for item in items:
        if no_gpu and "gpu" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=f"needs a GPU: {no_gpu}"))
        if no_nvcc and "nvcc" in item.keywords:
            item.add_marker(pytest.mark.skip(reason="needs nvcc on PATH"))


def spec_of(name: str) -> Spec:
    return load_spec(ROOT / "exercises" / name / "spec.toml")


def grade_folder(spec: Spec, folder: Path, *, backend: str = "cuda", profile: Profile | None = None,
                 reference: Path | None = None, benchmark: bool = True, seed: int = 0,
                 policy: StopPolicy | None = None, case_token: str | None = None) -> GradeResult:
    """Grade ``folder`` in-process (the submission still runs in a worker)."""
    from grader import device as dev
    from grader.sandbox.buffers import CudaBackend, HostBackend

    if backend == "cuda":
        info = dev.detect()
        be = CudaBackend()
        ceil = dev.ceilings(info, {spec.ceiling})
        cal = load_calibration(ROOT, info.arch)
    else:
        info, be, ceil, cal = None, HostBackend(), None, Calibration(None, {}, {})
    opts = GradeOptions(profile=profile or PROFILES["quick"], seed=seed, backend=backend, reference=reference,
                        benchmark=benchmark, policy=policy or StopPolicy(), case_token=case_token)
    return grade(spec, folder, opts, be, info, ceil, cal)


CHEATS = Path(__file__).resolve().parent / "cheats"
SHARED_KERNELS = CHEATS / "_kernels"   # kernels several cheats use unchanged, named by cheat.toml's ``kernel``


def cheat_submission(folder: Path, dest: Path) -> Path:
    """The submission folder of cheat ``folder``: the folder itself when it holds its kernel.cu;
    otherwise (cheat.toml names ``kernel = "FILE"`` in tests/cheats/_kernels/) a copy of it at
    ``dest / folder.name`` with that file as kernel.cu."""
    import tomllib
    if (folder / "kernel.cu").is_file():
        return folder
    shared = SHARED_KERNELS / tomllib.loads((folder / "cheat.toml").read_text())["kernel"]
    out = dest / folder.name
    shutil.copytree(folder, out, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(shared, out / "kernel.cu")
    return out


def fake_submission(tmp_path: Path, body: str, name: str = "sub") -> Path:
    """A CPU-side fake submission folder: an empty kernel.cu and ``body`` as solution.py."""
    import textwrap
    d = tmp_path / name
    d.mkdir(exist_ok=True)
    (d / "kernel.cu").write_text("// numpy fake: no kernel\n")
    (d / "solution.py").write_text(textwrap.dedent(body))
    return d


@pytest.fixture
def small_profile() -> Profile:
    return replace(PROFILES["quick"], examples=15, max_elements=2**14)


@pytest.fixture
def runner(monkeypatch):
    """click's CliRunner, with a wide terminal: rich wraps at 80 columns when not on a terminal."""
    from click.testing import CliRunner
    monkeypatch.setenv("COLUMNS", "300")
    return CliRunner()


@pytest.fixture
def no_gpu(monkeypatch):
    """A machine without a GPU, whatever this one has."""
    from grader import device
    monkeypatch.setattr(device, "unavailable_reason", lambda: "no CUDA GPU found")
    monkeypatch.setattr(device, "detect", lambda: None)
