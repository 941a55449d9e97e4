"""FP8 e4m3 inputs (``float8_e4m3fn``: uint8 bits, drawn as floats and encoded with round to
nearest even and saturation, decoded for the oracle) and shape entries that are expressions of
dims (``"K // 4"``): unit tests of grader.dtypes and the spec loader, and host grades of the
fixture exercise tests/fixtures/fp8 ex93_fp8_rowscale (y[m] = sum_k a[m, k] s[m, k // 4])."""
from __future__ import annotations

import json

import numpy as np
import pytest

from grader import cli
from grader.cases import draw_values
from grader.dtypes import E4M3, decode, encode, encode_e4m3
from grader.spec import SpecError, TensorSpec, load_spec
from tests.conftest import FIXTURES, fake_submission as fake

COURSE = FIXTURES / "fp8"
SPEC = COURSE / "exercises" / "ex93_fp8_rowscale" / "spec.toml"


# -- the format -----------------------------------------------------------------------------------
def test_the_e4m3_table_has_the_formats_known_values():
    """OCP OFP8 v1.0: largest finite 448 (0x7E), smallest normal 2^-6 (0x08), smallest subnormal
    2^-9 (0x01), 1.0 = 0x38, the only NaNs 0x7F and 0xFF, no infinities."""
    assert E4M3.dtype == np.float32 and E4M3.shape == (256,)
    assert E4M3[0x7E] == 448 and E4M3[0xFE] == -448 and E4M3[0x08] == 2.0 ** -6 and E4M3[0x01] == 2.0 ** -9
    assert E4M3[0x38] == 1.0 and E4M3[0x00] == 0 and np.signbit(E4M3[0x80])
    assert [i for i in range(256) if np.isnan(E4M3[i])] == [0x7F, 0xFF] and not np.isinf(E4M3).any()
    finite = E4M3[:0x7F]
    assert (np.diff(finite) > 0).all()   # codes 0x00..0x7E increase: the encoder's search relies on it


def test_the_e4m3_table_matches_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    want = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    assert np.array_equal(E4M3, want, equal_nan=True)


def test_the_encoder_rounds_to_nearest_even_and_saturates():
    codes = np.array([c for c in range(256) if not np.isnan(E4M3[c]) and c != 0x80])
    assert np.array_equal(encode_e4m3(np, E4M3[codes]), codes)          # every finite value round-trips
    # halfway between 1.0 (0x38) and 1.125 (0x39): the even code; between 1.125 and 1.25: 0x3A
    x = np.array([1.0625, 1.1875, 449.0, 1e9, -1e9, 2.0 ** -10, -(2.0 ** -10) * 3, np.nan, 0.0])
    assert encode_e4m3(np, x).tolist() == [0x38, 0x3A, 0x7E, 0x7E, 0xFE, 0x00, 0x82, 0x7F, 0x00]
    rs = np.random.RandomState(0)
    v = rs.normal(0, 100, 20000)
    got = E4M3[encode_e4m3(np, v)].astype(np.float64)
    finite = E4M3[:0x7F].astype(np.float64)
    nearest = np.abs(np.minimum(np.abs(v), 448)[:, None] - finite[None, :]).min(axis=1)
    assert np.allclose(np.abs(np.abs(got) - np.minimum(np.abs(v), 448)), nearest)   # never a farther code
    assert encode(np, v, "float8_e4m3fn").dtype == np.uint8
    assert np.array_equal(decode(np, encode(np, v, "float8_e4m3fn"), "float8_e4m3fn"), got.astype(np.float32))


def test_values_are_drawn_as_floats_then_encoded():
    rs = np.random.RandomState(1)
    a = draw_values(np, rs, "uniform", {"low": -600, "high": 600}, (50, 40), "float8_e4m3fn")
    assert a.dtype == np.uint8 and a.shape == (50, 40)
    vals = decode(np, a, "float8_e4m3fn")
    assert np.abs(vals).max() == 448 and len(np.unique(a)) > 100   # saturated, and spread over the codes
    c = draw_values(np, np.random.RandomState(2), "cauchy", {"loc": 0, "scale": 1}, (1000,), "float8_e4m3fn")
    assert c.dtype == np.uint8 and not np.isnan(decode(np, c, "float8_e4m3fn")).any()


# -- the spec -------------------------------------------------------------------------------------
def test_a_shape_entry_may_be_an_expression_of_dims():
    spec = load_spec(SPEC)
    s = next(t for t in spec.inputs if t.name == "s")
    assert s.concrete_shape({"M": 3, "K": 64}) == (3, 16)
    assert TensorSpec("sb", "float32", ("ceil(N / 128)", "K // 128")).concrete_shape({"N": 300, "K": 256}) == (3, 2)
    with pytest.raises(ValueError, match="must be an int from 1"):
        TensorSpec("x", "float32", ("N / 2",)).concrete_shape({"N": 4})


def _variant(tmp_path, text):
    folder = tmp_path / "ex93_fp8_rowscale"
    folder.mkdir(parents=True)
    (folder / "spec.toml").write_text(text)
    (folder / "reference.py").write_text((SPEC.parent / "reference.py").read_text())
    return folder


@pytest.mark.parametrize("entry, message", [
    ("K / 4", "an extent must be an int"),
    ("Q // 4", "which are not dims"),
    ("K //", "is not an expression of dims"),
    ("K // 8 - 1", "an extent must be an int from 1"),
])
def test_a_bad_shape_expression_is_refused_with_the_field_and_a_fix(tmp_path, entry, message):
    folder = _variant(tmp_path, SPEC.read_text().replace('"K // 4"', f'"{entry}"'))
    with pytest.raises(SpecError, match=message) as exc:
        load_spec(folder / "spec.toml")
    assert "signature.inputs[1]" in str(exc.value) and "fix:" in str(exc.value)


def test_an_fp8_output_is_refused_even_through_a_type_variable(tmp_path):
    text = SPEC.read_text().replace('[signature]', '[types]\nT = ["float32", "float8_e4m3fn"]\n\n[signature]')
    text = text.replace('outputs = [{ name = "y", dtype = "float32"', 'outputs = [{ name = "y", dtype = "T"')
    with pytest.raises(SpecError, match="no NaN code to spare"):
        load_spec(_variant(tmp_path, text) / "spec.toml")


# -- host grades ------------------------------------------------------------------------------------
def _grade(runner, tmp_path, folder):
    out_json = tmp_path / "r.json"
    res = runner.invoke(cli.main, ["93", "--root", str(COURSE), "--backend", "host", "--submission", str(folder),
                                   "--json", str(out_json)])
    return res, json.loads(out_json.read_text())


def test_the_fixture_solution_decodes_the_bits_and_passes_every_case(runner, tmp_path):
    res, data = _grade(runner, tmp_path, COURSE / "solutions" / "ex93_fp8_rowscale")
    assert data["status"] == "graded", (res.output, data)
    cases = data["cases"]
    assert cases and all(c["status"] == "pass" for c in cases), [c for c in cases if c["status"] != "pass"][:2]
    assert data["score"]["correctness"] == data["score"]["correctness_max"]


def test_a_solution_that_reads_the_bits_as_numbers_fails_and_the_stub_scores_zero(runner, tmp_path):
    wrong = fake(tmp_path, "import numpy as np\n\ndef solve(a, s, y):\n"
                           "    y[...] = (a.astype(np.float64) * np.repeat(s, 4, axis=1)).sum(axis=1)\n", name="wrong")
    _, data = _grade(runner, tmp_path, wrong)
    assert data["status"] == "graded" and data["score"]["correctness"] == 0
    assert any(c["status"] == "fail" for c in data["cases"])
    _, stub = _grade(runner, tmp_path, COURSE / "student_template" / "ex93_fp8_rowscale")
    assert stub["status"] == "graded" and stub["score"]["total"] == 0


def test_the_negative_controls_decode_fp8_inputs_before_the_oracle():
    """`grade check`'s controls call the oracle with the inputs they receive: FP8 bits are decoded
    first (else the oracle control would compute with the codes as numbers and fail)."""
    from grader.controls import run_controls
    results = {c.name: c for c in run_controls(load_spec(SPEC), examples=4)}
    assert results["oracle"].passed is True, results["oracle"].diagnosis
    for name in ("all_zero", "perturbed"):
        assert results[name].ok and results[name].passed is False, (name, results[name].diagnosis)
    assert all(c.ok for c in results.values()), [(c.name, c.diagnosis) for c in results.values() if not c.ok]


def test_a_tolerance_expression_sees_the_decoded_values_not_the_codes(tmp_path):
    """Red-team pass 16: abs_sum(a) in an atol summed the stored e4m3 codes (for codes [62 45 56 65],
    228 instead of 5.41), so a wrong answer passed; the inputs are decoded for the tolerance now."""
    from grader.cases import PROFILES
    from tests.conftest import grade_folder
    text = SPEC.read_text().replace("rtol = 1e-5\natol = 1e-2", 'rtol = 0\natol = "0.001 * abs_sum(a)"')
    assert 'abs_sum(a)' in text
    folder = _variant(tmp_path, text)
    off = fake(tmp_path, (COURSE / "solutions" / "ex93_fp8_rowscale" / "solution.py").read_text()
               + "\n_solve = solve\n\ndef solve(a, s, y):\n    _solve(a, s, y)\n    y += 0.2\n", name="off")
    r = grade_folder(load_spec(folder / "spec.toml"), off, backend="host", benchmark=False, profile=PROFILES["quick"],
                     case_token="M=1,K=4/a=0,s=0/seed=0")
    assert len(r.cases) == 1 and not r.cases[0].passed, r.cases
    assert "atol 0.00541" in r.cases[0].details[0], r.cases[0].details


def test_a_type_variable_may_not_offer_two_dtypes_stored_alike(tmp_path):
    """Red-team pass 16: T = ["uint8", "float8_e4m3fn"] loaded, yet both arrive as uint8 arrays."""
    text = SPEC.read_text().replace('[signature]', '[types]\nT = ["uint8", "float8_e4m3fn"]\n\n[signature]')
    text = text.replace('{ name = "a", dtype = "float8_e4m3fn"', '{ name = "a", dtype = "T"')
    with pytest.raises(SpecError, match="arrive as the same uint8 array"):
        load_spec(_variant(tmp_path, text) / "spec.toml")


@pytest.mark.parametrize("entry, message", [
    ("min()", "TypeError"),
    ("ceil(K, K)", "TypeError"),
    ("-" * 3000 + "K", "nested too deeply"),
    ("9**9**9 // 9**9**9", "beyond 1024"),
    ("2**100", "an extent must be an int from 1 to 2\\*\\*40"),
])
def test_a_malformed_shape_expression_is_a_spec_error_not_a_traceback_or_a_hang(tmp_path, entry, message):
    folder = _variant(tmp_path, SPEC.read_text().replace('"K // 4"', f'"{entry}"'))
    with pytest.raises(SpecError, match=message):
        load_spec(folder / "spec.toml")


def test_dims_that_break_a_shape_expression_are_never_drawn_and_an_edge_case_that_does_is_refused(tmp_path):
    """Red-team pass 16: "20 - K" is fine at the dims' minimum (K = 4) but not above K = 19; a
    correct solution was graded 0 ("case generation stopped"). Such dims now count as not allowed,
    like a constraint: hypothesis never draws them, and an edge case or benchmark with them is a
    spec error naming it."""
    from grader.cases import PROFILES
    from tests.conftest import grade_folder
    text = SPEC.read_text().replace('"K // 4"', '"20 - K"')
    with pytest.raises(SpecError, match=r"edge_cases\[1\]"):   # M = 33, K = 64: 20 - 64 < 1
        load_spec(_variant(tmp_path / "a", text) / "spec.toml")
    text = text.replace("[[edge_cases]]\nM = 33\nK = 64\n", "").replace("dims = { M = 64, K = 64 }", "dims = { M = 64, K = 16 }")
    folder = _variant(tmp_path / "b", text)
    (folder / "reference.py").write_text("def reference(xp, a, s):\n    return a.astype(xp.float64).sum(axis=1) * s[:, 0]\n")
    spec = load_spec(folder / "spec.toml")
    sub = fake(tmp_path, "import numpy as np\n\ndef solve(a, s, y):\n    pass\n", name="any")
    r = grade_folder(spec, sub, backend="host", benchmark=False, profile=PROFILES["quick"])
    assert r.cases and all(c.status != "grader_error" for c in r.cases), [(c.description, c.message) for c in r.cases]
    assert all(int(c.token.split("K=")[1].split("/")[0].split(",")[0]) <= 19 for c in r.cases)
