"""grader/spec.py and grader/expr.py: the real specs, every validation error, exercise lookup, Expr."""
from __future__ import annotations

from pathlib import Path

import pytest

from grader.expr import Expr, ExprError
from grader.spec import (Limits, SpecError, Thresholds, find_root, list_exercises, load_spec,
                         resolve_exercise)

ROOT = Path(__file__).resolve().parents[1]


def real(name: str):
    return load_spec(ROOT / "exercises" / name / "spec.toml")


# -- the three real specs ---------------------------------------------------------------------------
def test_ex01_vector_add_fields() -> None:
    s = real("ex01_vector_add")
    assert (s.name, s.number, s.title) == ("ex01_vector_add", 1, "Vector add: your first kernel")
    assert [(t.name, t.dtype, t.shape) for t in s.inputs] == [("a", "float32", ("n",)), ("b", "float32", ("n",))]
    assert [(t.name, t.dtype, t.shape) for t in s.outputs] == [("c", "float32", ("n",))]
    assert [(d.name, d.min, d.max, d.multiple_of) for d in s.dims] == [("n", 1, 2**31 + 17, 1)]
    assert s.constraints == ()
    assert [d.kind for d in s.values["a"]] == ["normal", "uniform"]
    assert s.values["b"][1].param("low") == -1e-3 and s.values["b"][1].param("high") == 1e-3
    assert [e.as_dict()["n"] for e in s.edge_cases] == [1, 3, 31, 33, 255, 257, 1025, 65537, 1000003, 67108865,
                                                         2**31 + 17]
    assert [e.hidden for e in s.edge_cases] == [False] * 10 + [True]   # 26 GB: grading mode only
    tol = s.tolerances["float32"]
    assert (tol.rtol, tol.atol) == (1e-7, 0.0) and s.equal_nan is False
    assert [b.name for b in s.benchmarks] == ["n=2^28", "n=2^24"]
    assert s.benchmarks[0].bytes.evaluate(s.benchmarks[0].as_dict()) == 12 * 268435456
    assert s.benchmarks[1].flops.evaluate({"n": 16777216}) == 16777216
    assert (s.points_correctness, s.points_performance, s.total_points) == (40.0, 60.0, 100.0)
    assert s.ceiling == "memory" and s.compile_options == ("-std=c++17",)
    assert s.limits == Limits(device_memory_gib=48.0)  # room for the hidden 2^31 + 17 case


@pytest.mark.parametrize("name, ratio, roofline", [
    ("ex01_vector_add", (0.2, 0.9), (0.1, 0.85)),
    ("ex04_reduction", (0.1, 0.8), (0.05, 0.8)),
    ("ex07_softmax", (0.1, 0.8), (0.05, 0.75)),
])
def test_real_thresholds_default_and_sm_90(name: str, ratio, roofline) -> None:
    s = real(name)
    t = s.thresholds(None)
    assert (t.ratio_zero, t.ratio_full) == ratio
    assert (t.roofline_zero, t.roofline_full) == roofline
    assert (t.ratio_floor, t.ratio_cap, t.implausible_ratio) == (0.01, 1.25, 3.0)  # class defaults
    # No [performance.sm_90] table in the real specs: an H200 uses the defaults.
    assert set(s.performance) == {"default"}
    assert s.thresholds("sm_90") == t


def test_ex04_reduction_fields() -> None:
    s = real("ex04_reduction")
    assert s.outputs[0].shape == (1,) and s.outputs[0].concrete_shape({"n": 5}) == (1,)
    assert [d.kind for d in s.values["x"]] == ["uniform", "normal", "normal", "integers", "normal", "normal"]
    assert s.values["x"][2].label == "normal(mean=1000,std=10)"
    assert s.values["x"][4].label == "normal(mean=0,std=1)" and s.values["x"][5].param("mean") < 0
    atol = s.tolerances["float32"].atol
    assert isinstance(atol, Expr) and atol.source == "2 * eps * log2(2 * n) * abs_sum(x)"
    assert atol.names == {"eps", "n", "x"} and atol.calls == {"log2", "abs_sum"}
    assert s.tolerances["float32"].rtol == 0.0
    assert len(s.edge_cases) == 11 and s.edge_cases[-2].as_dict() == {"n": 268435459}
    assert s.edge_cases[-2].values == (("x", 4),)    # zero-mean values at 2^28 + 3
    assert [b.bytes.evaluate(b.as_dict()) for b in s.benchmarks] == [4 * 2**28, 4 * 2**24]


def test_ex07_softmax_fields_and_check_dims() -> None:
    s = real("ex07_softmax")
    assert [d.name for d in s.dims] == ["rows", "cols"]
    assert [c.source for c in s.constraints] == ["rows * cols <= 2**26"]
    assert s.inputs[0].concrete_shape({"rows": 3, "cols": 5}) == (3, 5)
    assert [d.kind for d in s.values["x"]] == ["normal", "uniform", "normal", "normal", "masked", "masked",
                                               "row_constant", "cauchy"]
    assert s.values["x"][4].param("value") == float("-inf") and s.equal_nan is True
    assert s.edge_cases[-1].as_dict() == {"rows": 8191, "cols": 8193}
    assert {"rows": 16777217, "cols": 3} in [e.as_dict() for e in s.edge_cases]   # beyond gridDim.y
    assert [b.name for b in s.benchmarks] == ["4096x4096", "32768x1024"]
    assert s.benchmarks[1].flops.evaluate({"rows": 32768, "cols": 1024}) == 5 * 32768 * 1024
    assert s.check_dims({"rows": 8191, "cols": 8193}) is None           # 67108863 <= 2**26
    assert s.check_dims({"rows": 8192, "cols": 8193}) == "constraint 'rows * cols <= 2**26' does not hold"
    assert s.check_dims({"rows": 0, "cols": 3}) == "rows=0 is outside [1, 67108864]"
    assert s.check_dims({"rows": 3}) == "cols is missing"


# -- a valid spec, and one mutation per validation error -----------------------------------------
BASE = '''
[exercise]
name = "ex99_demo"
title = "Demo"
points = { correctness = 40, performance = 60 }

[signature]
inputs = [
  { name = "x", dtype = "float32", shape = ["rows", "cols"] },
  { name = "k", dtype = "int32", shape = ["cols"] },
]
outputs = [{ name = "y", dtype = "float32", shape = ["rows", "cols"] }]

[dims]
constraints = ["rows * cols <= 4096"]
[dims.rows]
min = 1
max = 64
[dims.cols]
min = 4
max = 256
multiple_of = 4

[[values.x]]
kind = "normal"
mean = 0
std = 1
[[values.x]]
kind = "uniform"
low = -1
high = 1

[[values.k]]
kind = "integers"
low = -8
high = 8
[[values.k]]
kind = "skewed"
low = 1
high = 100
value = 0
fraction = 0.5

[[edge_cases]]
rows = 1
cols = 4
[[edge_cases]]
rows = 3
cols = 12
hidden = true

[tolerance]
equal_nan = false
[tolerance.float32]
rtol = 1e-5
atol = "eps * sqrt(cols) * abs_sum(x)"

[[benchmark]]
name = "big"
dims = { rows = 16, cols = 256 }
bytes = "8 * rows * cols"
flops = "rows * cols"
[[benchmark]]
name = "square"
dims = { rows = 64, cols = 64 }
bytes = "8 * rows * cols"
hidden = true

[performance]
ceiling = "memory"
ratio_zero = 0.2
ratio_full = 0.9
[performance.sm_90]
ratio_full = 0.95

[compile]
options = ["-std=c++17"]

[features]
forbidden = ["cublas"]
required = ["__global__"]

[limits]
case_s = 5
'''

RANGE_BLOCK = "[dims.rows]\nmin = 1\nmax = 64\n"
COLS_BLOCK = "[dims.cols]\nmin = 4\nmax = 256\nmultiple_of = 4\n"
EDGE0 = "[[edge_cases]]\nrows = 1\ncols = 4\n"
BENCHMARKS = BASE[BASE.index("[[benchmark]]"):BASE.index("[performance]")]


def write_spec(folder: Path, text: str, name: str = "ex99_demo") -> Path:
    path = folder / name / "spec.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def mutate(old: str, new: str) -> str:
    assert BASE.count(old) == 1, f"{old!r} must occur exactly once in BASE"
    return BASE.replace(old, new)


def test_base_spec_is_valid(tmp_path: Path) -> None:
    s = load_spec(write_spec(tmp_path, BASE))
    assert s.name == "ex99_demo" and s.number == 99 and s.directory == tmp_path / "ex99_demo"
    assert s.dim("cols").multiple_of == 4
    assert [e.hidden for e in s.edge_cases] == [False, True]
    assert [(b.name, b.hidden, b.flops is None) for b in s.benchmarks] == [("big", False, False), ("square", True, True)]
    assert s.benchmarks[0].bytes.evaluate({"rows": 16, "cols": 256}) == 32768
    assert s.required == ("__global__",) and s.forbidden == ("cublas",)
    assert s.limits == Limits(compile_s=120.0, case_s=5.0, total_s=900.0)
    # [performance.sm_90] overrides ratio_full and inherits everything else from [performance].
    assert s.thresholds(None) == Thresholds(ratio_zero=0.2, ratio_full=0.9)
    assert s.thresholds("sm_90") == Thresholds(ratio_zero=0.2, ratio_full=0.95)
    assert s.thresholds("sm_80") == s.thresholds(None)


# (id, old text in BASE, replacement, field in brackets, a fragment of the problem)
ERRORS = [
    ("missing-exercise", '[exercise]\nname = "ex99_demo"\ntitle = "Demo"\n'
     'points = { correctness = 40, performance = 60 }\n', "", "exercise", "is missing or not a table"),
    ("bad-name-pattern", 'name = "ex99_demo"', 'name = "Ex99-Demo"', "exercise", "is not like 'ex07_softmax'"),
    ("name-folder-mismatch", 'name = "ex99_demo"', 'name = "ex98_demo"', "exercise", "differs from its folder"),
    ("negative-points", "correctness = 40", "correctness = -1", "exercise.points", "points must be >= 0"),
    ("zero-total-points", "correctness = 40, performance = 60", "correctness = 0, performance = 0",
     "exercise.points", "add up to more than 0"),
    ("missing-dims", '[dims]\nconstraints = ["rows * cols <= 4096"]\n' + RANGE_BLOCK + COLS_BLOCK, "",
     "dims", "is missing or not a table"),
    ("dims-without-dimensions", RANGE_BLOCK + COLS_BLOCK, "", "dims", "declares no dimension"),
    ("max-below-min", "min = 1\nmax = 64\n", "min = 1\nmax = 0\n", "dims.rows", "max (0) is below min (1)"),
    ("negative-min", "min = 1\nmax = 64\n", "min = -1\nmax = 64\n", "dims.rows", "min (-1) is negative"),
    ("multiple-of-zero", "multiple_of = 4", "multiple_of = 0", "dims.cols", "multiple_of (0) is below 1"),
    ("no-multiple-in-range", "min = 4\nmax = 256\nmultiple_of = 4", "min = 5\nmax = 7\nmultiple_of = 4",
     "dims.cols", "no multiple of 4 lies in [5, 7]"),
    ("unknown-dim-key", "min = 1\nmax = 64\n", "min = 1\nmax = 64\nstep = 2\n", "dims.rows", "unknown key 'step'"),
    ("bad-dim-type", "min = 1\nmax = 64\n", "min = 1\nmax = 64.5\n", "dims.rows", "'max' is 64.5, expected int"),
    ("unknown-constraint-name", '"rows * cols <= 4096"', '"rows * depth <= 4096"', "dims.constraints",
     "unknown name(s) ['depth']"),
    ("unknown-dim-in-shape", 'shape = ["cols"]', 'shape = ["colz"]', "signature.inputs[1]", "shape uses 'colz'"),
    ("non-positive-shape-entry", 'shape = ["cols"]', "shape = [0]", "signature.inputs[1]",
     "neither a dim name, an expression of dims nor a positive int"),
    ("unsupported-dtype", '{ name = "y", dtype = "float32"', '{ name = "y", dtype = "complex64"',
     "signature.outputs[0]", "dtype 'complex64' is not supported"),
    ("bfloat16-output-without-its-tolerance", '{ name = "y", dtype = "float32"', '{ name = "y", dtype = "bfloat16"',
     "tolerance.bfloat16", "is missing or not a table"),
    ("fp8-output", '{ name = "y", dtype = "float32"', '{ name = "y", dtype = "float8_e4m3fn"',
     "signature.outputs[0]", "FP8 e4m3 has no NaN code to spare for the poison"),
    ("empty-outputs", 'outputs = [{ name = "y", dtype = "float32", shape = ["rows", "cols"] }]', "outputs = []",
     "signature.outputs", "must be a non-empty list"),
    ("duplicate-argument-names", '{ name = "y", dtype', '{ name = "x", dtype', "signature", "['x'] used twice"),
    ("missing-values-for-input", '[[values.k]]\nkind = "integers"\nlow = -8\nhigh = 8\n'
     '[[values.k]]\nkind = "skewed"\nlow = 1\nhigh = 100\nvalue = 0\nfraction = 0.5\n', "",
     "values.k", "is missing or empty"),
    ("values-for-non-input", "[[edge_cases]]\nrows = 1", "[[values.z]]\nkind = \"normal\"\nmean = 0\nstd = 1\n"
     "[[edge_cases]]\nrows = 1", "values", "names ['z'] that are not inputs"),
    ("unknown-distribution-kind", 'kind = "normal"', 'kind = "gaussian"', "values.x[0]", "kind 'gaussian' is unknown"),
    ("missing-distribution-param", "mean = 0\nstd = 1\n", "mean = 0\n", "values.x[0]", "has no 'std'"),
    ("unknown-distribution-param", "mean = 0\nstd = 1\n", "mean = 0\nstd = 1\nscale = 2\n", "values.x[0]",
     "unknown key 'scale' for normal"),
    ("zero-std", "std = 1", "std = 0", "values.x[0]", "std must be > 0"),
    ("negative-std", "std = 1", "std = -2", "values.x[0]", "std must be > 0"),
    ("uniform-high-not-above-low", "low = -1\nhigh = 1", "low = -1\nhigh = -1", "values.x[1]", "high must be > low"),
    ("integers-high-below-low", "low = -8\nhigh = 8", "low = -8\nhigh = -9", "values.k[0]", "high must be > low"),
    ("integers-below-uint8", '{ name = "k", dtype = "int32"', '{ name = "k", dtype = "uint8"', "values.k[0]",
     "values [-8, 7] do not all fit uint8"),
    ("integers-above-int32", "low = -8\nhigh = 8", "low = -8\nhigh = 2147483649", "values.k[0]",
     "do not all fit int32"),
    ("skewed-fraction-above-one", "fraction = 0.5", "fraction = 1.5", "values.k[1]", "fraction must be in (0, 1]"),
    ("skewed-fraction-zero", "fraction = 0.5", "fraction = 0", "values.k[1]", "fraction must be in (0, 1]"),
    ("edge-case-missing-dim", EDGE0, "[[edge_cases]]\nrows = 1\n", "edge_cases[0]", "has no value for dim 'cols'"),
    ("edge-case-unknown-dim", EDGE0, EDGE0 + "depth = 2\n", "edge_cases[0]", "unknown key 'depth'"),
    ("edge-case-non-int", EDGE0, "[[edge_cases]]\nrows = 1\ncols = 4.0\n", "edge_cases[0]",
     "cols = 4.0 is not an integer"),
    ("edge-case-bool", EDGE0, "[[edge_cases]]\nrows = true\ncols = 4\n", "edge_cases[0]",
     "rows = True is not an integer"),
    ("edge-case-violates-constraint", EDGE0, "[[edge_cases]]\nrows = 64\ncols = 128\n", "edge_cases[0]",
     "constraint 'rows * cols <= 4096' does not hold"),
    ("edge-case-out-of-range", EDGE0, "[[edge_cases]]\nrows = 65\ncols = 4\n", "edge_cases[0]",
     "rows=65 is outside [1, 64]"),
    ("edge-case-not-a-multiple", EDGE0, "[[edge_cases]]\nrows = 1\ncols = 6\n", "edge_cases[0]",
     "cols=6 is not a multiple of 4"),
    ("edge-case-hidden-not-bool", "hidden = true\n\n[tolerance]", 'hidden = "yes"\n\n[tolerance]', "edge_cases[1]",
     "'hidden' is 'yes', expected bool"),
    ("tolerance-missing", '[tolerance]\nequal_nan = false\n[tolerance.float32]\nrtol = 1e-5\n'
     'atol = "eps * sqrt(cols) * abs_sum(x)"\n', "", "tolerance", "is missing or not a table"),
    ("tolerance-missing-output-dtype", '{ name = "y", dtype = "float32"', '{ name = "y", dtype = "float64"',
     "tolerance.float64", "is missing or not a table"),
    ("negative-rtol", "rtol = 1e-5", "rtol = -1e-5", "tolerance.float32", "rtol is negative"),
    ("negative-atol", 'atol = "eps * sqrt(cols) * abs_sum(x)"', "atol = -0.5", "tolerance.float32",
     "atol is negative"),
    ("atol-bare-input", 'atol = "eps * sqrt(cols) * abs_sum(x)"', 'atol = "eps * x"', "tolerance.float32",
     "inputs may appear only as abs_sum(<input>)"),
    ("atol-abs-sum-of-dim", 'atol = "eps * sqrt(cols) * abs_sum(x)"', 'atol = "eps * abs_sum(cols)"',
     "tolerance.float32", "inputs may appear only as abs_sum(<input>)"),
    ("atol-abs-sum-of-expression", 'atol = "eps * sqrt(cols) * abs_sum(x)"', 'atol = "eps * abs_sum(x + 1)"',
     "tolerance.float32", "inputs may appear only as abs_sum(<input>)"),
    ("atol-unknown-name", 'atol = "eps * sqrt(cols) * abs_sum(x)"', 'atol = "eps * depth"', "tolerance.float32",
     "unknown name(s) ['depth']"),
    ("bytes-unknown-name", 'bytes = "8 * rows * cols"\nflops', 'bytes = "8 * rows * depth"\nflops',
     "benchmark[0].bytes", "unknown name(s) ['depth']"),
    ("flops-unknown-name", 'flops = "rows * cols"', 'flops = "rows * n"', "benchmark[0].flops",
     "unknown name(s) ['n']"),
    ("bytes-unknown-function", 'bytes = "8 * rows * cols"\nflops', 'bytes = "exp(rows)"\nflops',
     "benchmark[0].bytes", "calls unknown function(s) ['exp']"),
    ("bytes-calls-import", 'bytes = "8 * rows * cols"\nflops', "bytes = '__import__(\"os\")'\nflops",
     "benchmark[0].bytes", "calls unknown function(s) ['__import__']"),
    ("bytes-import-attribute", 'bytes = "8 * rows * cols"\nflops',
     "bytes = '__import__(\"os\").system(\"true\")'\nflops", "benchmark[0].bytes", "only plain calls"),
    ("bytes-attribute", 'bytes = "8 * rows * cols"\nflops', 'bytes = "rows.real"\nflops', "benchmark[0].bytes",
     "Attribute is not allowed"),
    ("bytes-subscript", 'bytes = "8 * rows * cols"\nflops', 'bytes = "rows[0]"\nflops', "benchmark[0].bytes",
     "Subscript is not allowed"),
    ("bytes-syntax-error", 'bytes = "8 * rows * cols"\nflops', 'bytes = "8 * "\nflops', "benchmark[0].bytes",
     "cannot parse"),
    ("bytes-not-a-string", 'bytes = "8 * rows * cols"\nflops', "bytes = 8\nflops", "benchmark[0]",
     "'bytes' is 8, expected str"),
    ("benchmark-dims-invalid", "dims = { rows = 16, cols = 256 }", "dims = { rows = 16, cols = 255 }",
     "benchmark[0].dims", "cols=255 is not a multiple of 4"),
    ("no-benchmark", BENCHMARKS, "", "benchmark", "has no shape"),
    ("duplicate-benchmark-names", 'name = "square"', 'name = "big"', "benchmark", "two shapes share a name"),
    ("unknown-ceiling", 'ceiling = "memory"', 'ceiling = "tensor"', "performance", "ceiling 'tensor' is unknown"),
    ("ratio-full-equals-zero", "ratio_full = 0.9\n", "ratio_full = 0.2\n", "performance",
     "ratio_full (0.2) must exceed ratio_zero (0.2)"),
    ("arch-ratio-full-below-zero", "ratio_full = 0.95", "ratio_full = 0.1", "performance.sm_90",
     "ratio_full (0.1) must exceed ratio_zero (0.2)"),
    ("roofline-full-below-zero", "ratio_full = 0.9\n", "ratio_full = 0.9\nroofline_full = 0.01\n", "performance",
     "roofline_full (0.01) must exceed roofline_zero (0.05)"),
    ("negative-threshold", "ratio_zero = 0.2", "ratio_zero = -0.2", "performance",
     "ratio_zero = -0.2 is not a non-negative number"),
    ("floor-above-cap", "ratio_full = 0.9\n", "ratio_full = 0.9\nratio_floor = 2.0\n", "performance",
     "need 0 < ratio_floor < ratio_cap"),
    ("bad-arch-key", "[performance.sm_90]", "[performance.hopper]", "performance.hopper",
     "is neither a threshold nor an arch table"),
    ("misspelt-threshold", "ratio_full = 0.9\n", "ratio_full = 0.9\nratio_ful = 0.9\n", "performance.ratio_ful",
     "is neither a threshold nor an arch table"),
    ("unknown-key-in-arch-table", "ratio_full = 0.95", "ratio_full = 0.95\nspeed = 1", "performance.sm_90",
     "unknown key 'speed'"),
    ("compile-options-not-list", 'options = ["-std=c++17"]', 'options = "-std=c++17"', "compile",
     "'options' must be a list of strings"),
    ("bad-regex-in-features", 'forbidden = ["cublas"]', 'forbidden = ["cublas("]', "features",
     "pattern 'cublas(' is not a regular expression"),
    ("allowed-kernel-not-a-name", 'forbidden = ["cublas"]', 'forbidden = ["cublas"]\nallowed_kernels = ["cupy copy"]',
     "features", "allowed_kernels entry 'cupy copy' is not a kernel name pattern"),
    ("forbidden-header-not-a-folder", 'forbidden = ["cublas"]', 'forbidden = ["cublas"]\nforbidden_headers = ["cub"]',
     "features", "forbidden_headers entry 'cub' is neither a header folder nor a header file"),
    ("limits-not-a-number", "case_s = 5", 'case_s = "5"', "limits", "'case_s' is '5', expected int or float"),
    ("unknown-top-level-section", "[limits]\ncase_s = 5\n", "[limits]\ncase_s = 5\n\n[extras]\nfoo = 1\n",
     "extras", "unknown section 'extras'"),
]


@pytest.mark.parametrize("old, new, fld, problem", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_validation_error(tmp_path: Path, old: str, new: str, fld: str, problem: str) -> None:
    path = write_spec(tmp_path, mutate(old, new))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    err = info.value
    text = str(err)
    assert err.field == fld, text
    assert text.startswith(f"{path}: [{fld}] "), text
    assert problem in text
    assert "; fix: " in text and err.fix and "\n" not in text


# A new user's trial: a misspelt key was reported as the missing one ("[dims.n] has no 'min'"), an
# edge case's "hiden" as a dim ("dims must be exactly ['n'] (missing [], unknown ['hiden'])").
@pytest.mark.parametrize("old, new, fld, problem, fix", [
    ("min = 1\nmax = 64\n", "minn = 1\nmax = 64\n", "dims.rows", "unknown key 'minn' (did you mean 'min'?)",
     "rename 'minn' to 'min'"),
    ("hidden = true\n\n[tolerance]", "hiden = true\n\n[tolerance]", "edge_cases[1]",
     "unknown key 'hiden' (did you mean 'hidden'?)", "rename 'hiden' to 'hidden'"),
    ('title = "Demo"', 'titel = "Demo"', "exercise", "unknown key 'titel' (did you mean 'title'?)",
     "rename 'titel' to 'title'"),
    ("mean = 0\nstd = 1\n", "mean = 0\nsdt = 1\n", "values.x[0]", "unknown key 'sdt' for normal (did you mean 'std'?)",
     "rename 'sdt' to 'std'"),
    ("[signature]", "[signatur]", "signatur", "unknown section 'signatur' (did you mean 'signature'?)",
     "rename 'signatur' to 'signature'"),
    ("equal_nan = false", "equal_nans = false", "tolerance", "unknown key 'equal_nans' (did you mean 'equal_nan'?)",
     "rename 'equal_nans' to 'equal_nan'"),
    ("ratio_full = 0.95", "ratio_full = 0.95\nratio_zeor = 0.1", "performance.sm_90",
     "unknown key 'ratio_zeor' (did you mean 'ratio_zero'?)", "rename 'ratio_zeor' to 'ratio_zero'"),
    ("min = 1\nmax = 64\n", "min = 1\nmax = 64\nstep = 2\n", "dims.rows", "unknown key 'step'",
     "use only max, min, multiple_of"),    # nothing close: the keys it takes
    (EDGE0, "[[edge_cases]]\nrows = 1\ncolls = 4\n", "edge_cases[0]",
     "unknown key 'colls' (did you mean 'cols'?); no value for dim 'cols'", "rename 'colls' to 'cols'"),
], ids=["dim-key", "edge-case-hidden", "exercise-key", "distribution-key", "section", "tolerance-key",
        "threshold", "nothing-close", "edge-case-dim"])
def test_a_misspelt_key_is_named_with_the_closest_known_one(tmp_path: Path, old, new, fld, problem, fix) -> None:
    path = write_spec(tmp_path, mutate(old, new))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert (info.value.field, info.value.fix) == (fld, fix), str(info.value)
    assert str(info.value) == f"{path}: [{fld}] {info.value.problem}; fix: {fix}" and problem in info.value.problem


@pytest.mark.parametrize("tail, where, fix", [
    ('[[extra]\n', "TOML syntax error at line ", "; fix: correct the syntax at line "),
    ('bad = "unterminated', "TOML syntax error at the end of the file: Unterminated string", "; fix: correct the syntax there")],
    ids=["line-and-column", "end-of-file"])
def test_a_toml_syntax_error_names_line_and_column_not_a_section(tmp_path: Path, tail: str, where: str, fix: str) -> None:
    text = BASE.rstrip("\n") + "\n" + tail
    path = write_spec(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    msg = str(info.value)
    assert "[toml]" not in msg and info.value.field == "" and "\n" not in msg, msg
    assert msg.startswith(f"{path}: {where}") and fix in msg, msg
    if "line" in where:
        line = len(text.splitlines())
        assert f"at line {line}, column " in msg and f"at line {line} (see docs/spec-format.md)" in msg, msg


def test_missing_file_is_a_spec_error(tmp_path: Path) -> None:
    path = tmp_path / "ex99_demo" / "spec.toml"
    with pytest.raises(SpecError, match=r"\[file\] does not exist; fix: create it"):
        load_spec(path)


# -- validation gaps (real bugs) ------------------------------------------------------------------
@pytest.mark.parametrize("old, new", [
    ("low = -8\nhigh = 8", "low = 0\nhigh = 1"),
    ("low = 1\nhigh = 100\nvalue = 0", "low = 0\nhigh = 1\nvalue = 0"),
    ('kind = "integers"\nlow = -8\nhigh = 8', 'kind = "uniform"\nlow = 0\nhigh = 1'),
], ids=["integers-0-1", "skewed-0-1-value-0", "uniform-0-1-int32"])
def test_all_zero_distribution_is_rejected(tmp_path: Path, old: str, new: str) -> None:
    with pytest.raises(SpecError, match=r"\[values\.k\[\d\]\]"):
        load_spec(write_spec(tmp_path, mutate(old, new)))


def test_skewed_value_outside_integer_dtype_is_rejected(tmp_path: Path) -> None:
    text = mutate('{ name = "k", dtype = "int32"', '{ name = "k", dtype = "uint8"')
    text = text.replace("low = -8\nhigh = 8", "low = 0\nhigh = 8").replace("value = 0", "value = 300")
    with pytest.raises(SpecError, match=r"\[values\.k\[1\]\]"):
        load_spec(write_spec(tmp_path, text))


@pytest.mark.parametrize("old, new", [
    ("case_s = 5", "case_sec = 5"),
    ("rtol = 1e-5", "rtol = 1e-5\natl = 0.5"),
    ('flops = "rows * cols"', 'flop = "rows * cols"'),
], ids=["limits", "tolerance", "benchmark"])
def test_unknown_key_is_rejected(tmp_path: Path, old: str, new: str) -> None:
    with pytest.raises(SpecError, match="unknown"):
        load_spec(write_spec(tmp_path, mutate(old, new)))


# -- finding exercises --------------------------------------------------------------------------------
@pytest.mark.parametrize("query", ["7", "07", "ex07", "EX07", " ex07_softmax ", "softmax"])
def test_resolve_exercise_forms(query: str) -> None:
    ex = resolve_exercise(ROOT, query)
    assert ex.name == "ex07_softmax"
    assert ex.directory == ROOT / "exercises" / "ex07_softmax"
    assert ex.spec_path == ROOT / "exercises" / "ex07_softmax" / "spec.toml"
    assert ex.solution == ROOT / "solutions" / "ex07_softmax"
    assert ex.template == ROOT / "student_template" / "ex07_softmax"


@pytest.mark.parametrize("query, name", [("1", "ex01_vector_add"), ("vector_add", "ex01_vector_add"),
                                         ("ex4", "ex04_reduction"), ("reduction", "ex04_reduction")])
def test_resolve_other_exercises(query: str, name: str) -> None:
    assert resolve_exercise(ROOT, query).name == name


@pytest.mark.parametrize("query", ["ex99", "99", "soft", "ex07_softmaxx", "7a"])
def test_resolve_unknown_exercise_lists_known(query: str) -> None:
    with pytest.raises(LookupError) as info:
        resolve_exercise(ROOT, query)
    text = str(info.value)
    assert text.startswith(f"no exercise matches {query!r}") and "; known: " in text
    for name in ("ex01_vector_add", "ex04_reduction", "ex07_softmax"):
        assert name in text


def test_list_exercises_skips_other_folders(tmp_path: Path) -> None:
    for d in ("ex02_b", "ex01_a", "notes", "ex3_short"):
        (tmp_path / "exercises" / d).mkdir(parents=True)
    (tmp_path / "exercises" / "ex05_file").write_text("")
    assert [e.name for e in list_exercises(tmp_path)] == ["ex01_a", "ex02_b"]
    with pytest.raises(LookupError, match="known: ex01_a, ex02_b"):
        resolve_exercise(tmp_path, "ex05")


def test_find_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert find_root(ROOT / "exercises" / "ex07_softmax") == ROOT
    assert find_root(ROOT) == ROOT
    monkeypatch.chdir(ROOT / "grader")
    assert find_root() == ROOT
    course = tmp_path / "course"
    (course / "exercises").mkdir(parents=True)
    (course / "a" / "b").mkdir(parents=True)
    assert find_root(course / "a" / "b") == course
    assert find_root(course / "exercises") == course


def test_find_root_without_exercises(tmp_path: Path) -> None:
    (tmp_path / "lonely").mkdir()
    with pytest.raises(FileNotFoundError) as info:
        find_root(tmp_path / "lonely")
    text = str(info.value)
    assert text.startswith(f"no exercises/ folder in {tmp_path / 'lonely'} or above")
    assert "--root DIR" in text


# -- Expr -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("source, env, expected", [
    ("2 * n + 3", {"n": 5}, 13),
    ("n // 4", {"n": 11}, 2),
    ("n % 4", {"n": 11}, 3),
    ("n / 4", {"n": 5}, 1.25),
    ("2 ** n - 1", {"n": 10}, 1023),
    ("-n + +n * 3", {"n": 2}, 4),
    ("(a + b) * (a - b)", {"a": 7, "b": 3}, 40),
    ("1.5e3 * n", {"n": 2}, 3000.0),
    # comparisons, chained like Python
    ("1 <= n < 10", {"n": 1}, True),
    ("1 <= n < 10", {"n": 10}, False),
    ("a < b > c", {"a": 1, "b": 5, "c": 2}, True),
    ("a < b > c", {"a": 1, "b": 5, "c": 9}, False),
    ("n == 3 != 4", {"n": 3}, True),
    ("rows * cols <= 2**26", {"rows": 8191, "cols": 8193}, True),
    ("rows * cols <= 2**26", {"rows": 8192, "cols": 8193}, False),
    # boolean operators
    ("n > 1 and n < 5", {"n": 3}, True),
    ("n > 1 and n < 5", {"n": 5}, False),
    ("n == 1 or n == 7", {"n": 7}, True),
    ("n == 1 or n == 7", {"n": 6}, False),
    ("not n", {"n": 0}, True),
    # functions
    ("sqrt(n)", {"n": 16}, 4.0),
    ("log2(n)", {"n": 1024}, 10.0),
    ("ceil(n / 4)", {"n": 5}, 2),
    ("floor(n / 4)", {"n": 7}, 1),
    ("min(n, 3) + max(n, 3)", {"n": 10}, 13),
    ("abs(a - b)", {"a": 2, "b": 9}, 7),
])
def test_expr_evaluates(source: str, env: dict, expected) -> None:
    value = Expr(source).evaluate(env)
    assert value == expected and type(value) is type(expected)


def test_expr_names_calls_and_extra_functions() -> None:
    e = Expr("2 * eps * sqrt(n) * abs_sum(x)")
    assert e.names == {"eps", "n", "x"} and e.calls == {"sqrt", "abs_sum"}
    assert e.evaluate({"eps": 0.5, "n": 16, "x": [1, -2, 3]},
                      {"abs_sum": lambda v: sum(abs(t) for t in v)}) == 2 * 0.5 * 4 * 6
    assert Expr("n") == Expr("n") and Expr("n") != Expr("m") and hash(Expr("n")) == hash(Expr("n"))


def test_expr_unknown_name_and_function() -> None:
    with pytest.raises(ExprError, match=r"unknown name 'm' \(known: a, n\)"):
        Expr("n + m").evaluate({"n": 1, "a": 2})
    with pytest.raises(ExprError, match="unknown function 'foo'"):
        Expr("foo(1)").evaluate({})
    with pytest.raises(ExprError, match="unknown function 'abs_sum'"):  # only when the caller passes it
        Expr("abs_sum(x)").evaluate({"x": 1})
    with pytest.raises(ExprError, match="is not a number"):
        Expr("'a' * 3").evaluate({})
    with pytest.raises(ExprError, match="is not a number"):
        Expr("True + 1").evaluate({})


@pytest.mark.parametrize("source, message", [
    ("().__class__", "Attribute is not allowed"),
    ("x.y", "Attribute is not allowed"),
    ("__import__('os').system('true')", "only plain calls"),
    ("(lambda: 1)()", "only plain calls"),
    ("max(n, key=abs)", "only plain calls"),
    ("x[0]", "Subscript is not allowed"),
    ("[n, n]", "List is not allowed"),
    ("n if n else 1", "IfExp is not allowed"),
    ("2 +", "cannot parse"),
    ("n = 1", "cannot parse"),
])
def test_expr_rejects_constructs(source: str, message: str) -> None:
    with pytest.raises(ExprError, match=message):
        Expr(source)


def test_expr_cannot_call_open_or_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    e = Expr("open('pwned', 'w')")  # parses: a plain call ...
    assert e.calls == {"open"}
    with pytest.raises(ExprError, match="unknown function 'open'"):  # ... but open is not callable
        e.evaluate({})
    with pytest.raises(ExprError, match="unknown function '__import__'"):
        Expr("__import__('os')").evaluate({})
    assert not (tmp_path / "pwned").exists()


def test_forbidden_headers_default_to_the_algorithm_libraries_and_can_be_cleared(tmp_path: Path) -> None:
    from grader.spec import DEFAULT_FORBIDDEN_HEADERS
    assert DEFAULT_FORBIDDEN_HEADERS[:2] == ("cub/", "thrust/")
    assert "cooperative_groups/reduce.h" in DEFAULT_FORBIDDEN_HEADERS and "cooperative_groups/" not in DEFAULT_FORBIDDEN_HEADERS
    assert load_spec(write_spec(tmp_path, mutate('forbidden = ["cublas"]', 'forbidden = ["cublas"]'))).forbidden_headers \
        == DEFAULT_FORBIDDEN_HEADERS
    cleared = mutate('forbidden = ["cublas"]', 'forbidden = ["cublas"]\nforbidden_headers = []')
    assert load_spec(write_spec(tmp_path, cleared)).forbidden_headers == ()
    files = mutate('forbidden = ["cublas"]', 'forbidden = ["cublas"]\nforbidden_headers = ["cub/", "mylib/algo.cuh"]')
    assert load_spec(write_spec(tmp_path, files)).forbidden_headers == ("cub/", "mylib/algo.cuh")
