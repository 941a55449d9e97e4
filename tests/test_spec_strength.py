"""Issue 19: specs that let real student bugs pass. One test (or group) per row of the issue, on
the CPU: numpy fakes of the buggy submissions are graded on the host backend (or the comparison
is run directly) and must fail with a message that names the shape kind, while honest float32
versions pass. What needs a GPU (the 2^31-element cases, the reference solutions) is listed in
the report for the lead."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT, fake_submission, grade_folder, spec_of
from grader import compare as compare_mod
from grader.cases import PROFILES, Case, draw_values, edge_cases, make_inputs
from grader.compare import compare, index_overflow_hint, resolve_atol, resolve_normwise, resolve_rtol
from grader.instance import large_arrays, load_oracle, run_magnitude, run_oracle
from grader.sanitize import pick_edge_case
from grader.scoring import Score, withhold
from grader.spec import elements

GRID_YZ_LIMIT = 65535


def grade_case(name: str, tmp_path: Path, body: str, token: str):
    """Grade one case (``--case TOKEN``) of a numpy fake on the host backend, correctness only."""
    spec = spec_of(name)
    r = grade_folder(spec, fake_submission(tmp_path, body), backend="host", benchmark=False, case_token=token)
    assert r.status == "graded", r.reason
    return r


def failure_text(r) -> str:  # type: ignore[no-untyped-def]
    c = r.cases[0]
    return " ".join((c.message, *c.details))


# -- ex03 (and ex07, ex08): beyond the y/z grid limit -----------------------------------------------------
@pytest.mark.parametrize("name, dim", [("ex03_transpose", "rows"), ("ex07_softmax", "rows"),
                                       ("ex08_layernorm", "rows")])
def test_an_edge_case_exceeds_the_y_grid_limit_at_256_rows_per_block(name: str, dim: str) -> None:
    """A natural mapping puts row tiles on gridDim.y (at most 65535): some visible edge case needs
    more than 65535 blocks there even with 256 rows per block, and the README names the limit."""
    spec = spec_of(name)
    assert any(e.as_dict()[dim] > GRID_YZ_LIMIT * 256 for e in spec.edge_cases if not e.hidden)
    assert "65535" in (ROOT / "exercises" / name / "README.md").read_text()


def test_ex03_has_the_tile_64_boundary_case() -> None:
    dims = [e.as_dict() for e in spec_of("ex03_transpose").edge_cases]
    assert {"rows": 4194305, "cols": 63} in dims and math.ceil(4194305 / 64) == GRID_YZ_LIMIT + 2


@pytest.mark.parametrize("name", ["ex05_scan", "ex06_histogram", "ex09_gemm_naive", "ex12_gemm_tensorcore"])
def test_other_exercises_cannot_exceed_the_y_grid_limit_by_their_ranges(name: str) -> None:
    """1-D exercises have no second grid axis; GEMM rows and columns are at most 16384 < 65535 (K,
    which may be larger, is the reduction loop, not a grid axis)."""
    spec = spec_of(name)
    assert len(spec.dims) == 1 or all(spec.dim(d).max < GRID_YZ_LIMIT for d in ("M", "N"))


def test_rows_beyond_the_grid_limit_unwritten_name_the_shape() -> None:
    """What a kernel with row tiles on gridDim.y leaves behind: every y column past the last
    launched tile holds the poison; the pattern names the axis (here scaled down 2^10 times)."""
    rows, cols, limit = 4100, 3, 4096
    ref = np.random.default_rng(0).normal(size=(cols, rows)).astype(np.float32).astype(np.float64)
    out = ref.astype(np.float32)
    view, bits = compare_mod.poison_value("float32")
    out.view(view)[:, limit:] = bits
    mm = compare("y", out, ref, spec_of("ex03_transpose").tolerances["float32"], 0.0, False, np, ("cols", "rows"))
    assert "every element with rows >= 4096" in mm.summary() and "never written" in mm.summary()


# -- ex07: small outputs written as 0; +-inf rows; constant rows; heavy tails ---------------------------------
SOFTMAX = '''
import numpy as np

def solve(x, y):
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        m = x.max(axis=-1, keepdims=True)
        e = np.exp((x - m).astype(np.float32))
        s = e.sum(axis=-1, keepdims=True, dtype=np.float32)
        out = (e * (np.float32(1) / s)).astype(np.float32)
    {spoil}
    y[...] = out
'''


def test_ex07_honest_float32_softmax_passes_a_long_row(tmp_path: Path) -> None:
    r = grade_case("ex07_softmax", tmp_path, SOFTMAX.format(spoil="pass"), "rows=2,cols=1048576/x=0/seed=3")
    assert r.correct, failure_text(r)


def test_ex07_zeroing_outputs_below_1e_7_fails(tmp_path: Path) -> None:
    body = SOFTMAX.format(spoil="out[out < 1e-7] = 0  # a fast-math shortcut")
    r = grade_case("ex07_softmax", tmp_path, body, "rows=2,cols=1048576/x=0/seed=3")
    assert not r.correct
    text = failure_text(r)
    assert "expected" in text and "rows=2, cols=1048576" in r.cases[0].description


def test_ex07_row_sum_off_by_a_tenth_of_a_percent_fails(tmp_path: Path) -> None:
    body = SOFTMAX.format(spoil="out *= np.float32(1.001)  # a wrong normalisation")
    assert not grade_case("ex07_softmax", tmp_path, body, "rows=7,cols=1023/x=0/seed=1").correct


@pytest.mark.parametrize("token", ["rows=4097,cols=3/x=4/seed=1",     # many rows entirely -inf
                                   "rows=5,cols=1025/x=4/seed=2",     # runs of -inf
                                   "rows=2049,cols=7/x=5/seed=3",     # +inf entries
                                   "rows=7,cols=1023/x=6/seed=4",     # constant rows
                                   "rows=9,cols=4097/x=7/seed=5"])    # Cauchy
def test_ex07_policy_rows_pass_an_honest_kernel(tmp_path: Path, token: str) -> None:
    r = grade_case("ex07_softmax", tmp_path, SOFTMAX.format(spoil="pass"), token)
    assert r.correct, failure_text(r)


def test_ex07_masked_rows_are_drawn_with_full_minus_inf_rows() -> None:
    spec = spec_of("ex07_softmax")
    x = make_inputs(spec, Case((("rows", 4097), ("cols", 3)), (("x", 4),), 1), np)["x"]
    all_masked = np.isneginf(x).all(axis=1)
    assert 100 < all_masked.sum() < 4097 and np.isfinite(x).any()
    y = run_oracle(load_oracle(spec), spec, {"x": x}, np)[0]
    assert np.isnan(y[all_masked]).all() and (y[np.isneginf(x) & ~all_masked[:, None]] == 0).all()


def test_ex07_all_masked_rows_written_as_zero_fail(tmp_path: Path) -> None:
    """The policy says NaN for a row of -inf; a kernel that writes 0 there (a -FLT_MAX identity
    plus a guarded division) does not follow it."""
    body = SOFTMAX.format(spoil="out[np.isneginf(x).all(axis=-1)] = 0")
    r = grade_case("ex07_softmax", tmp_path, body, "rows=4097,cols=3/x=4/seed=1")
    assert not r.correct and "expected nan" in failure_text(r)


def test_ex07_online_softmax_nan_on_leading_minus_inf_fails(tmp_path: Path) -> None:
    """The classic online-softmax bug: a running max that starts at -inf computes exp(-inf - -inf)
    = NaN when a row starts with -inf, and the NaN spreads through the row."""
    body = SOFTMAX.format(spoil="out[np.isneginf(x[:, 0])] = np.nan")
    r = grade_case("ex07_softmax", tmp_path, body, "rows=5,cols=1025/x=4/seed=2")
    assert not r.correct and "NaN" in failure_text(r)


# -- ex08: E[x^2] - E[x]^2, constant rows, heavy tails -------------------------------------------------------
LAYERNORM = '''
import numpy as np

def solve(x, gamma, beta, y, eps):
    f = np.float32
    c = f(x.shape[1])
    mean = (x.sum(axis=1, keepdims=True, dtype=f) / c).astype(f)
    if {naive}:
        var = ((x * x).sum(axis=1, keepdims=True, dtype=f) / c - mean * mean).astype(f)  # cancels
        var = np.maximum(var, f(0))
    else:
        d = (x - mean).astype(f)
        var = ((d * d).sum(axis=1, keepdims=True, dtype=f) / c).astype(f)
    rstd = (f(1) / np.sqrt(var + f(eps))).astype(f)
    y[...] = ((x - mean) * rstd * gamma + beta).astype(f)
'''


@pytest.mark.parametrize("token", ["rows=20000,cols=2/x=3/seed=1", "rows=7,cols=1023/x=3/seed=2",
                                   "rows=2,cols=16384/x=3/seed=3", "rows=1000,cols=33/x=4/seed=4"])
def test_ex08_one_pass_variance_fails_at_any_row_length(tmp_path: Path, token: str) -> None:
    r = grade_case("ex08_layernorm", tmp_path, LAYERNORM.format(naive=True), token)
    assert not r.correct
    assert grade_case("ex08_layernorm", tmp_path, LAYERNORM.format(naive=False), token).correct


@pytest.mark.parametrize("token", ["rows=3,cols=16384/x=5/seed=1",     # constant rows
                                   "rows=1000,cols=33/x=5/seed=2",
                                   "rows=9,cols=4097/x=6/seed=3",      # Cauchy
                                   "rows=5,cols=1025/x=0/seed=4", "rows=3,cols=2/x=2/seed=5"])
def test_ex08_two_pass_float32_passes(tmp_path: Path, token: str) -> None:
    r = grade_case("ex08_layernorm", tmp_path, LAYERNORM.format(naive=False), token)
    assert r.correct, failure_text(r)


def test_constant_rows_and_heavy_tails_are_drawn() -> None:
    rs = np.random.RandomState(0)
    rows = draw_values(np, rs, "row_constant", {"mean": 0, "std": 100}, (50, 7), "float32")
    assert (rows == rows[:, :1]).all() and len(np.unique(rows[:, 0])) == 50
    heavy = draw_values(np, rs, "cauchy", {"loc": 0, "scale": 1}, (100000,), "float16")
    assert np.isfinite(heavy).all() and np.abs(heavy).max() == np.finfo(np.float16).max  # clipped, not inf
    for name in ("ex07_softmax", "ex08_layernorm"):
        spec = spec_of(name)
        kinds = [spec.values["x"][dict(e.values)["x"]].kind for e in spec.edge_cases if e.values]
        assert "row_constant" in kinds and "cauchy" in kinds


# -- ex01, ex02, ex09-ex12: 64-bit indices ---------------------------------------------------------------------
@pytest.mark.parametrize("name", ["ex01_vector_add", "ex02_saxpy"])
def test_a_hidden_edge_case_has_more_than_2_31_elements(name: str) -> None:
    spec = spec_of(name)
    big = [e for e in spec.edge_cases if e.as_dict()["n"] == 2**31 + 17]
    assert big and all(e.hidden for e in big)                  # grading mode only
    assert large_arrays(spec, big[0].as_dict())                # the hint applies there
    assert not any(e.as_dict()["n"] >= 2**31 for e in spec.edge_cases if not e.hidden)


@pytest.mark.parametrize("name", ["ex09_gemm_naive", "ex10_gemm_smem", "ex11_gemm_regtile", "ex12_gemm_tensorcore"])
def test_gemm_hidden_cases_put_a_and_b_past_2_31_elements(name: str) -> None:
    spec = spec_of(name)
    big = {n for e in spec.edge_cases if e.hidden for n, _ in large_arrays(spec, e.as_dict())}
    assert big == {"a", "b"}


def test_wrong_elements_past_2_31_say_index_overflow(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pattern an int32-index kernel leaves (elements from flat index 2^31 on wrong), scaled
    down: INDEX_LIMIT is patched to 1024 so the arrays stay small."""
    monkeypatch.setattr(compare_mod, "INDEX_LIMIT", 1024)
    ref = np.arange(1100, dtype=np.float64)
    out = ref.astype(np.float32)
    out[1024:] = -1.0
    text = compare("c", out, ref, spec_of("ex01_vector_add").tolerances["float32"], 0.0, False, np, ("n",)).summary()
    assert "every element with n >= 1024" in text and "index overflow?" in text


def test_any_failure_in_a_case_with_2_31_element_arrays_says_index_overflow() -> None:
    spec = spec_of("ex09_gemm_naive")
    large = large_arrays(spec, {"M": 16384, "N": 8, "K": 131073})
    assert large == [("a", 16384 * 131073)]
    assert "index overflow?" in index_overflow_hint(None, large)
    assert index_overflow_hint(5, []) is None


def test_compare_works_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Outputs are compared CHUNK elements at a time (2^31-element outputs on the GPU): the verdict
    and the statistics do not depend on the chunking."""
    ref = np.random.default_rng(1).normal(size=(37, 29))
    out = ref.astype(np.float32)
    out[20, 3] += 1.0
    tol = spec_of("ex07_softmax").tolerances["float32"]
    whole = compare("y", out, ref, tol, 1e-6, False, np, ("rows", "cols"), rtol=1e-4)
    monkeypatch.setattr(compare_mod, "CHUNK", 7)
    chunked = compare("y", out, ref, tol, 1e-6, False, np, ("rows", "cols"), rtol=1e-4)
    assert whole == chunked and whole.first_bad_index == (20, 3)


# -- ex04: subsampling, tolerance from a realistic bound, implausible results -----------------------------------
SUM = '''
import numpy as np

def solve(x, out):
    n = x.size
    if {subsample} and n >= 2**20:          # the bug of the issue, at 2^28 on the GPU
        out[0] = np.float32(x[::32].sum(dtype=np.float64) * 32)
    else:
        out[0] = x.sum(dtype=np.float32)    # pairwise float32
'''


@pytest.mark.parametrize("dist", [4, 5, 0])   # zero mean, negative offset, uniform(0, 1)
def test_ex04_subsampled_sum_fails_at_a_large_n(tmp_path: Path, dist: int) -> None:
    token = f"n=1048579/x={dist}/seed=7"
    r = grade_case("ex04_reduction", tmp_path, SUM.format(subsample=True), token)
    assert not r.correct and "out: 1 of 1 elements wrong" in failure_text(r)
    assert grade_case("ex04_reduction", tmp_path, SUM.format(subsample=False), token).correct


def test_ex04_tolerance_scales_with_the_sum_of_abs_x_not_the_sum() -> None:
    spec = spec_of("ex04_reduction")
    tol = spec.tolerances["float32"]
    assert tol.rtol == 0.0 and "abs_sum(x)" in tol.atol.source and "log2" in tol.atol.source
    x = np.array([1e6, -1e6, 1.0], np.float32)     # sum 1, sum|x| 2e6
    assert resolve_atol(tol, "float32", {"n": 3}, {"x": x}, np) == pytest.approx(2 * 2**-23 * math.log2(6) * 2000001)
    means = [d.param("mean") if d.kind == "normal" else (d.param("low") + d.param("high")) / 2
             for d in spec.values["x"]]
    assert min(means) < 0 and 0 in means


def test_ex05_zero_mean_and_negative_offsets_pass_a_tiled_float32_scan(tmp_path: Path) -> None:
    body = '''
import numpy as np

def solve(x, y):
    if x.dtype.kind != "f":
        y[...] = np.cumsum(x, dtype=np.int64).astype(y.dtype)
        return
    n, t = x.size, 1024
    carry = np.float32(0)
    for s in range(0, n, t):
        part = np.cumsum(x[s:s + t], dtype=np.float32) + carry
        y[s:s + t] = part
        carry = part[-1]
'''
    spec = spec_of("ex05_scan")
    assert min(d.param("mean") for d in spec.values["x"] if d.kind == "normal") < 0
    for token in ("n=1000003,T=float32/x=5/seed=1", "n=1000003,T=float32/x=4/seed=2"):
        r = grade_case("ex05_scan", tmp_path, body, token)
        assert r.correct, failure_text(r)
    dropped = body.replace("y[s:s + t] = part", "y[s:s + t] = part\n        if s == 0: y[5:t] -= x[4]")
    assert not grade_case("ex05_scan", tmp_path, dropped, "n=4099,T=float32/x=4/seed=3").correct


def test_implausible_results_get_no_performance_points_until_reviewed() -> None:
    sc = Score(40.0, 40.0, 60.0, 60.0, "roofline", (), 2.0)
    flags = ["n=2^28: 3100% of the measured ceiling is above what the GPU can do"]
    held = withhold(sc, flags)
    assert (held.performance, held.withheld, held.total) == (0.0, 60.0, 40.0)
    assert "withheld until reviewed" in held.note and "--accept-implausible" in held.note
    kept = withhold(sc, flags, accepted=True)
    assert (kept.performance, kept.withheld) == (60.0, 0.0) and "accepted" in kept.note
    assert withhold(sc, []) == sc


def test_withheld_points_appear_in_every_report_format() -> None:
    import io
    import json

    import jsonschema
    from rich.console import Console

    from grader.grade import GradeResult
    from grader.report import gradescope, json_report, junit, text
    sc = withhold(Score(40.0, 40.0, 60.0, 60.0, "roofline", (), 2.0), ["x: implausible"])
    r = GradeResult(exercise="ex04_reduction", title="t", submission="s", status="graded", reason="",
                    reason_kind="", profile="quick", seed=0, secret_used=False, device=None, ceilings=None,
                    kernels=(), cases=(), smallest_failure=None, repro=None, benchmarks=(), score=sc,
                    flags=("x: implausible",), hidden_cases=0, hidden_benchmarks=0, worker_restarts=0,
                    seconds=1.0, started="2026-01-01T00:00:00")
    data = json.loads(json.dumps(json_report.to_dict(r, 0), default=str))
    jsonschema.validate(data, json_report.schema())
    assert data["score"]["withheld"] == 60 and "withheld until reviewed" in data["score"]["note"]
    assert 'name="withheld" value="60"' in junit.to_xml(r)
    assert "withheld until reviewed" in json.dumps(gradescope.to_dict(r))
    buf = io.StringIO()
    text.render(r, Console(file=buf, width=200))
    assert "60 withheld pending review" in buf.getvalue()


# -- ex09-ex12: componentwise bound; irregular and skinny benchmarks ---------------------------------------------
def gemm_mismatch(name: str, m: int, n: int, k: int, spoil, normwise: float | None = None):  # type: ignore[no-untyped-def]
    spec = spec_of(name)
    case = Case((("M", m), ("N", n), ("K", k)), (("a", 0), ("b", 0)), 11,
                types=tuple((t, c[0]) for t, c in spec.types.items()))
    values = make_inputs(spec, case, np)
    oracle = load_oracle(spec)
    ref = run_oracle(oracle, spec, values, np, case.type_dict)[0]
    mag = run_magnitude(oracle, spec, values, np, case.dim_dict, case.type_dict)[0]
    a = values["a"].astype(np.float32) if values["a"].dtype != np.uint16 else \
        (values["a"].astype(np.uint32) << 16).view(np.float32)
    b = values["b"].astype(np.float32) if values["b"].dtype != np.uint16 else \
        (values["b"].astype(np.uint32) << 16).view(np.float32)
    # an honest float32 product, summed in a different order: two halves of K (split-K)
    h = k // 2
    out = (a[:, :h] @ b[:h] + a[:, h:] @ b[h:]).astype(np.float32)
    spoil(out)
    tol = spec.tolerances["float32"]
    atol = resolve_atol(tol, "float32", case.dim_dict, values, np, mag)
    bound = normwise if normwise is not None else resolve_normwise(tol, "float32", case.dim_dict)
    return compare("c", out, ref, tol, atol, False, np, ("M", "N"), bound, resolve_rtol(tol, "float32", case.dim_dict))


@pytest.mark.parametrize("name", ["ex09_gemm_naive", "ex12_gemm_tensorcore"])
def test_gemm_reordered_float32_sums_pass_the_componentwise_bound(name: str) -> None:
    assert gemm_mismatch(name, 67, 129, 1031, lambda c: None) is None


def test_gemm_one_element_35_percent_off_fails_componentwise() -> None:
    """At 8192^3 the norm-wise bound let one element 35 % off pass. Here the norm-wise bound is
    relaxed to what 8192^3 allows relative to one element of 8192^2 (so it passes), and the
    componentwise check must still fail, naming the element."""
    def spoil(c):  # type: ignore[no-untyped-def]
        c[40, 100] *= 1.35
    mm = gemm_mismatch("ex10_gemm_smem", 67, 129, 1031, spoil, normwise=1.0)
    assert mm is not None and mm.n_bad == 1 and mm.first_bad_index == (40, 100)
    assert "outside the componentwise bound" in mm.summary() and "flat index 5260" in mm.summary()


@pytest.mark.parametrize("name", ["ex09_gemm_naive", "ex10_gemm_smem", "ex11_gemm_regtile", "ex12_gemm_tensorcore"])
def test_gemm_benchmarks_include_an_irregular_shape(name: str) -> None:
    spec = spec_of(name)
    assert any(all(v % 128 for v in b.as_dict().values()) for b in spec.benchmarks)
    assert spec.tolerances["float32"].uses_magnitude and spec.tolerances["float32"].normwise is not None
    if name == "ex12_gemm_tensorcore":
        assert {"M": 16, "N": 8192, "K": 8192} in [b.as_dict() for b in spec.benchmarks]


# -- ex06: contention levels, hot value drawn per case ---------------------------------------------------------
def test_ex06_contention_levels_and_drawn_hot_values() -> None:
    spec = spec_of("ex06_histogram")
    skewed = [d for d in spec.values["x"] if d.kind == "skewed"]
    assert sorted(d.param("fraction") for d in skewed) == [0.1, 0.4, 0.9, 1.0]
    assert all("value" not in dict(d.params) for d in skewed)
    hot = set()
    for seed in range(12):
        x = make_inputs(spec, Case((("n", 4096),), (("x", 4),), seed), np)["x"]
        assert len(np.unique(x)) == 1 and x[0] != 0    # 100 %: one value, never all zero
        hot.add(int(x[0]))
    assert len(hot) >= 6
    pinned = {dict(e.values).get("x") for e in spec.edge_cases}
    assert {1, 2, 3, 4} <= pinned
    assert {b.distribution("x") for b in spec.benchmarks} >= {0, 3, 4}


# -- all: --sanitize picks a case with many warps and blocks ---------------------------------------------------
@pytest.mark.parametrize("name, expected", [("ex01_vector_add", {"n": 1000003}),
                                            ("ex03_transpose", {"rows": 7, "cols": 1000003}),
                                            ("ex09_gemm_naive", {"M": 129, "N": 127, "K": 1000})])
def test_sanitize_picks_the_largest_edge_case_under_the_cap(name: str, expected: dict) -> None:
    spec = spec_of(name)
    token, why = pick_edge_case(spec, edge_cases(spec, PROFILES["quick"], 0))
    assert token.startswith(",".join(f"{k}={v}" for k, v in expected.items()) + "/")
    assert "largest edge case within the sanitizer's size cap" in why
    assert elements(spec, expected) > 32 * 256   # several warps and blocks
