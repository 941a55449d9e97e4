"""``grade new exNN_name [--from exMM]``: a new exercise that ``grade check`` accepts as a starting
point. Without ``--from`` it is a working "copy x to y" exercise; with it, a copy of that exercise
renamed. Either way TODO markers say what to replace, and ``grade check`` lists them."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

from grader.spec import NAME_RE, Exercise, list_exercises

SPEC = '''# TODO: describe the exercise; every field is documented in docs/spec-format.md.
[exercise]
name = "{name}"
title = "TODO: a one-line title"
points = {{ correctness = 40, performance = 60 }}

[signature]
inputs = [{{ name = "x", dtype = "float32", shape = ["n"] }}]
outputs = [{{ name = "y", dtype = "float32", shape = ["n"] }}]

[dims.n]
min = 1
max = 268435456

[[values.x]]
kind = "normal"
mean = 0
std = 1

[[edge_cases]]
n = 1
[[edge_cases]]
n = 33
[[edge_cases]]
n = 1025

[tolerance.float32]
rtol = 0
atol = 0

[[benchmark]]
name = "n=2^28"
dims = {{ n = 268435456 }}
bytes = "8 * n"

[performance]
ceiling = "memory"
'''

README = '''# {name}: TODO title

TODO: learning goals, the interface (`solve(x, y)`), hints, and the roofline numbers for the GPU.
'''

REFERENCE = '''"""Oracle for {name}. TODO: compute the exercise's outputs in float64."""


def reference(xp, x):
    return x.astype(xp.float64)
'''

KERNEL = '''// {name}: {what}
extern "C" __global__ void copy_kernel(const float* __restrict__ x, float* __restrict__ y, long long n)
{{
{body}
}}
'''
SOLUTION_BODY = '''    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        y[i] = x[i];'''
STUB_BODY = "    // TODO: write y[i] = x[i] for every i in [0, n)."

SOLUTION_PY = '''import numpy as np

from grader.kernel import load

_kernel = load("kernel.cu").get_function("copy_kernel")


def solve(x, y):
    n = y.size
    _kernel((min((n + 255) // 256, 65535),), (256,), (x, y, np.int64(n)))
'''


def create(root: Path, name: str, source: Exercise | None = None) -> list[Path]:
    """Create the exercise folder, its stub and its solution; returns the files written.

    Raises:
        ValueError: a malformed name, or one whose number or name is taken.
    """
    if not NAME_RE.match(name):
        raise ValueError(f"{name!r}: an exercise name looks like ex17_my_kernel (exNN_ then lowercase words)")
    exercises = list_exercises(root)
    used = {int(e.name[2:4]) for e in exercises}
    unused = [n for n in range(1, 100) if n not in used]
    free = f"ex{next((n for n in unused if n > max(used | {0})), unused[0] if unused else 0):02d}"
    for ex in exercises:
        if ex.name == name:
            raise ValueError(f"{name} already exists (exercises/{name}); fix: choose another name ({free} is free), "
                             f"or edit that one")
        if ex.name[:4] == name[:4]:
            raise ValueError(f"{name}: its number {name[:4]} is taken by {ex.name}; fix: choose another exNN "
                             f"({free} is free)")
    ex = Exercise(name, root / "exercises" / name, root / "solutions" / name, root / "student_template" / name)
    written: list[Path] = []
    if source is not None:
        shutil.copytree(source.directory, ex.directory, ignore=shutil.ignore_patterns("__pycache__"))
        for src, dst in ((source.solution, ex.solution), (source.template, ex.template)):
            if src.is_dir():
                shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        spec = ex.directory / "spec.toml"
        text = re.sub(r'(?m)^name = "[^"]*"', f'name = "{name}"', spec.read_text(), count=1)
        spec.write_text(f"# TODO: adapt this copy of {source.name} to {name}.\n" + text)
        readme = ex.directory / "README.md"
        readme.write_text(f"<!-- TODO: rewrite this copy of {source.name}'s assignment for {name}. -->\n"
                          + (readme.read_text() if readme.is_file() else ""))
    else:
        ex.directory.mkdir(parents=True)
        (ex.directory / "spec.toml").write_text(SPEC.format(name=name))
        (ex.directory / "README.md").write_text(README.format(name=name))
        (ex.directory / "reference.py").write_text(REFERENCE.format(name=name))
        for folder, what, body in ((ex.solution, "reference solution (TODO: replace the copy)", SOLUTION_BODY),
                                   (ex.template, "your kernel", STUB_BODY)):
            folder.mkdir(parents=True)
            (folder / "kernel.cu").write_text(KERNEL.format(name=name, what=what, body=body))
            (folder / "solution.py").write_text(SOLUTION_PY)
    for folder in (ex.directory, ex.solution, ex.template):
        written += sorted(p for p in folder.rglob("*") if p.is_file())
    return written
