"""Shared fixtures: the course root, spec loading, GPU/nvcc skips, a direct grade helper, and the
cheat corpus's submission folders."""
from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from grader.cases import PROFILES, Profile
from grader.grade import GradeOptions, GradeResult
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
    from grader.context import GradingContext

    ctx = GradingContext.on(dev.detect(), ROOT) if backend == "cuda" else GradingContext.host()
    opts = GradeOptions(profile=profile or PROFILES["quick"], seed=seed, backend=backend, reference=reference,
                        benchmark=benchmark, policy=policy or StopPolicy(), case_token=case_token)
    return ctx.grade(spec, folder, opts)


CHEATS = Path(__file__).resolve().parent / "cheats"
SHARED_KERNELS = CHEATS / "_kernels"   # kernel parts several cheats use unchanged, named by cheat.toml's ``kernel``


def cheat_meta(folder: Path) -> dict:
    """Cheat ``folder``'s cheat.toml (its keys: tests/test_cheats.py)."""
    import tomllib
    return tomllib.loads((folder / "cheat.toml").read_text())


def cheat_kernel_names(meta: dict) -> list[str]:
    """The kernel parts a cheat.toml names (``kernel = "FILE"`` or a list of FILEs; none without it)."""
    named = meta.get("kernel", [])
    return [named] if isinstance(named, str) else list(named)


def cheat_kernel_parts(folder: Path) -> list[Path]:
    """The files cheat ``folder``'s cheat.toml names as its kernel, each in the cheat's own folder or
    else in tests/cheats/_kernels/; [] when it names none (the folder holds its own kernel.cu, or
    takes its base's)."""
    return [folder / n if (folder / n).is_file() else SHARED_KERNELS / n
            for n in cheat_kernel_names(cheat_meta(folder))]


def cheat_solution(folder: Path) -> str:
    """The solution.py of cheat ``folder``: its own, or, when its cheat.toml names ``base = "NAME"``
    (a cheat of the same exercise), NAME's solution.py with this cheat's first line ("# cheat:
    <tries>") and each of its ``change = [["OLD", "NEW"], ...]`` applied (OLD must occur once).

    Raises:
        AssertionError: an OLD that does not occur exactly once (the base changed: update the change).
    """
    if (folder / "solution.py").is_file():
        return (folder / "solution.py").read_text()
    meta = cheat_meta(folder)
    base = cheat_solution(folder.parent / meta["base"])
    text = f"# cheat: {meta['tries']}\n" + base.split("\n", 1)[1]
    for old, new in meta.get("change", []):
        assert text.count(old) == 1, f"{folder.name}: {old!r} occurs {text.count(old)} times in {meta['base']}"
        text = text.replace(old, new)
    return text


def cheat_submission(folder: Path, dest: Path) -> Path:
    """The submission folder of cheat ``folder``: the folder itself when it holds its kernel.cu and
    solution.py; otherwise a copy of it at ``dest / folder.name`` with kernel.cu made of the parts
    cheat.toml names (:func:`cheat_kernel_parts`, joined in order; the parts of its own are left out
    of the copy) or else its base's kernel.cu, and solution.py from :func:`cheat_solution`."""
    if (folder / "kernel.cu").is_file() and (folder / "solution.py").is_file():
        return folder
    parts = cheat_kernel_parts(folder)
    out = dest / folder.name
    own = {p.name for p in parts if p.parent == folder}
    shutil.copytree(folder, out, ignore=shutil.ignore_patterns("__pycache__", *own))
    if parts:
        (out / "kernel.cu").write_text("\n".join(p.read_text().rstrip("\n") + "\n" for p in parts))
    elif not (out / "kernel.cu").is_file():
        base = cheat_submission(folder.parent / cheat_meta(folder)["base"], dest / "base")
        shutil.copy(base / "kernel.cu", out / "kernel.cu")
    (out / "solution.py").write_text(cheat_solution(folder))
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
