"""Candidate references under trial (README, "GPU suite"): each folder is a solution (kernel.cu,
solution.py) that benchmarks/try_candidates.sh checks and times beside its reference. What the
candidates and the benchmark scripts share: loading a solution.py by its path. Imported as
``benchmarks.candidates``, with the repository root on sys.path (every benchmark script puts it
there)."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_solution_module(path: Path, name: str) -> ModuleType:
    """The solution.py at ``path`` executed as a fresh module called ``name`` (its
    ``load("kernel.cu")`` resolves next to it; the reference solutions compile on import)."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def reference(exercise: str) -> ModuleType:
    """A fresh module of solutions/<exercise>/solution.py: what a candidate varies or falls back to."""
    return load_solution_module(ROOT / "solutions" / exercise / "solution.py", f"{exercise}_reference_for_candidate")
