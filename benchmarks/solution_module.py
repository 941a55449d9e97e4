"""Loading a solution.py by its path, as the benchmark scripts do (a reference, a fixture, or a
folder given with --solution). Imported as ``benchmarks.solution_module``, with the repository root
on sys.path (every benchmark script puts it there)."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def load_solution_module(path: Path, name: str) -> ModuleType:
    """The solution.py at ``path`` executed as a fresh module called ``name`` (its
    ``load("kernel.cu")`` resolves next to it; the reference solutions compile on import)."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
