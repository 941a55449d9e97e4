"""bfloat16 outputs: stored as uint16 bits, poisoned with the NaN 0x7FDA, decoded to float32 and
compared with ``[tolerance.bfloat16]``. Unit tests of poison/decode/compare, the spec loader, the
negative controls, and host grades of the course fixture ex92_scale_bf16 (y = a * x, y bfloat16)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from grader.cases import PROFILES, edge_cases
from grader.compare import compare, is_float, poison_value, resolve_rtol
from grader.controls import applicable, run_controls
from grader.dtypes import decode, encode
from grader.instance import Instance, load_oracle
from grader.sandbox.buffers import HostBackend
from grader.spec import Tolerance, load_spec, machine_epsilon
from grader.timing import StopPolicy
from tests.conftest import FIXTURES, fake_submission as fake, grade_folder

COURSE = FIXTURES / "course"
SPEC = COURSE / "exercises" / "ex92_scale_bf16" / "spec.toml"
SOLUTION = COURSE / "solutions" / "ex92_scale_bf16"
PROFILE = replace(PROFILES["quick"], examples=15, max_elements=2**13)
TOL = Tolerance(rtol=2.0 ** -7, atol=0.0)

# solve(x, y, a) of ex92: y = a * x written as bfloat16 bits by a helper (round to nearest even)
_ROUND = '''
import numpy as np

def bits(v):
    u = np.asarray(v, dtype=np.float32).view(np.uint32)
    return ((u + (((u >> 16) & 1) + 0x7FFF)) >> 16).astype(np.uint16)
'''


def _bf16(values) -> np.ndarray:
    return encode(np, np.asarray(values, dtype=np.float32), "bfloat16")


# -- poison and decode ---------------------------------------------------------------------------------
def test_the_poison_is_a_bfloat16_nan_other_than_the_canonical_one():
    view, bits = poison_value("bfloat16")
    assert view is np.uint16 and bits == 0x7FDA
    value = decode(np, np.array([bits], dtype=np.uint16), "bfloat16")[0]
    assert np.isnan(value)
    canonical = encode(np, np.array([np.nan], dtype=np.float32), "bfloat16")[0]  # what __float2bfloat16(NAN) writes
    assert canonical == 0x7FC0 != bits
    assert int(np.float32(np.nan).view(np.uint32)) >> 16 != bits   # nor the top half of float32's NaN


def test_decode_is_exact_and_bfloat16_is_a_float_dtype_with_eps_2_to_the_minus_7():
    bits = np.array([0x3F80, 0xBFC0, 0x7F80, 0x0001, 0x4049], dtype=np.uint16)
    got = decode(np, bits, "bfloat16")
    assert got.dtype == np.float32
    assert got.tolist()[:3] == [1.0, -1.5, float("inf")] and got[3] == np.float32(2.0 ** -133)
    assert got[4] == np.float32(3.140625)
    assert is_float("bfloat16") and is_float("float16") and not is_float("int32")
    assert machine_epsilon("bfloat16") == 2.0 ** -7
    assert resolve_rtol(Tolerance(rtol=load_spec(SPEC).tolerances["bfloat16"].rtol, atol=0.0), "bfloat16", {}) \
        == 2.0 ** -7


# -- compare ---------------------------------------------------------------------------------------------
def test_compare_accepts_correctly_rounded_bits_and_decodes_them():
    ref = np.random.default_rng(0).normal(size=1000)
    assert compare("y", _bf16(ref), ref, TOL, 0.0, False, np, dtype="bfloat16") is None


def test_compare_reports_wrong_bits_with_decoded_values_and_hex():
    ref = np.array([1.0, 2.0, 3.0, 4.0])
    out = _bf16(ref)
    out[2] = 0x4050   # 3.25
    mm = compare("y", out, ref, TOL, 0.0, False, np, ["n"], dtype="bfloat16")
    assert (mm.n_bad, mm.n_unwritten, mm.n_nan, mm.first_bad_index) == (1, 0, 0, (2,))
    assert (mm.first_bad_got, mm.first_bad_expected, mm.first_bad_bits) == (3.25, 3.0, "0x4050")
    assert "got 3.25 (bits 0x4050), expected 3" in mm.summary()


def test_compare_counts_the_poison_as_never_written_and_a_canonical_nan_as_nan():
    ref = np.array([1.0, 2.0, 3.0, 4.0])
    out = _bf16(ref)
    out[3] = 0x7FDA
    mm = compare("y", out, ref, TOL, 0.0, False, np, dtype="bfloat16")
    assert (mm.n_bad, mm.n_unwritten, mm.n_nan) == (1, 1, 0)
    assert "1 never written (still hold the poison)" in mm.summary() and "bits 0x7FDA" in mm.summary()
    out[3] = 0x7FC0
    mm = compare("y", out, ref, TOL, 0.0, False, np, dtype="bfloat16")
    assert (mm.n_bad, mm.n_unwritten, mm.n_nan) == (1, 0, 1)
    assert "never written" not in mm.summary() and "1 NaN" in mm.summary() and "bits 0x7FC0" in mm.summary()
    # equal_nan lets a computed NaN match a NaN of the oracle, never the poison
    ref[3] = np.nan
    assert compare("y", out, ref, TOL, 0.0, True, np, dtype="bfloat16") is None
    out[3] = 0x7FDA
    assert compare("y", out, ref, TOL, 0.0, True, np, dtype="bfloat16").n_unwritten == 1


def test_compare_with_a_normwise_bound_decodes_too():
    ref = np.random.default_rng(1).normal(size=(16, 16))
    tol = Tolerance(rtol=0.0, atol=0.0, normwise=None, elementwise=False)
    out = _bf16(ref)
    assert compare("c", out, ref, tol, 0.0, False, np, normwise=2.0 ** -7, rtol=0.0, dtype="bfloat16") is None
    out[0, 0] = _bf16([100.0])[0]
    mm = compare("c", out, ref, tol, 0.0, False, np, normwise=2.0 ** -7, rtol=0.0, dtype="bfloat16")
    assert mm.normwise_failed and mm.first_bad_got == 100.0 and mm.first_bad_bits == "0x42C8"


def _bf16_input_spec(tmp_path, kind_lines):
    """ex92's spec with x a bfloat16 input drawn as ``kind_lines`` say."""
    text = SPEC.read_text().replace('{ name = "x", dtype = "float32"', '{ name = "x", dtype = "bfloat16"')
    text = text.replace('[[values.x]]\nkind = "normal"\nmean = 0\nstd = 1', "[[values.x]]\n" + kind_lines)
    folder = tmp_path / SPEC.parent.name
    folder.mkdir(exist_ok=True)
    (folder / "spec.toml").write_text(text)
    return folder / "spec.toml"


def test_a_bfloat16_input_is_real_valued_for_the_spec_loader(tmp_path):
    """A bfloat16 input draws from real distributions: the loader once took it for an integer type
    (its name does not start with "float") and refused kind = "uniform" for it."""
    spec = load_spec(_bf16_input_spec(tmp_path, 'kind = "uniform"\nlow = -1\nhigh = 1'))
    assert spec.dtypes_of(spec.inputs[0]) == ("bfloat16",)


def test_compare_refuses_a_bfloat16_output_not_stored_as_bits():
    with pytest.raises(ValueError, match="stored as uint16, got float32"):
        compare("y", np.zeros(3, np.float32), np.zeros(3), TOL, 0.0, False, np, dtype="bfloat16")


def test_other_dtypes_compare_as_before():
    ref = np.array([1.0, 2.0])
    out = np.array([1.0, 2.5], dtype=np.float32)
    mm = compare("y", out, ref, TOL, 0.0, False, np)
    assert mm.first_bad_bits is None and "bits" not in mm.summary()
    assert compare("y", out, ref, TOL, 0.0, False, np, dtype="float32").summary() == mm.summary()


# -- the instance: poisoned bits, decoded comparison --------------------------------------------------
def test_an_instance_poisons_the_bfloat16_output_and_checks_it_decoded():
    spec = load_spec(SPEC)
    case = edge_cases(spec, PROFILE, seed=0)[1]   # n = 33
    inst = Instance(spec, HostBackend(), load_oracle(spec), case)
    try:
        inst.reset()
        y = inst.arrays["y"].array
        assert y.dtype == np.uint16 and y.shape == (33,) and np.all(y == 0x7FDA)
        message, details = inst.check()
        assert "33 never written" in details[0], details
        a, x = inst.values["a"].item(), inst.values["x"]
        y[...] = _bf16((np.float32(a) * x).astype(np.float32))
        assert inst.check() == ("", [])
    finally:
        inst.free()


# -- the course fixture, graded on the host backend ----------------------------------------------------
def test_the_honest_solution_passes():
    r = grade_folder(load_spec(SPEC), SOLUTION, backend="host", profile=PROFILE, reference=SOLUTION,
                     policy=StopPolicy(min_samples=5, max_seconds=0.5, warmup_ms=1))
    assert r.correct, r.smallest_failure
    assert r.score.correctness == 50 and r.benchmarks[0].submission.stats.n >= 5   # timed outputs checked too


def test_wrong_bits_fail_with_decoded_values_in_the_message(tmp_path):
    """A classic conversion bug: the low half of the float32's bits written instead of the top half."""
    body = "import numpy as np\ndef solve(x, y, a):\n" \
           "    y[...] = ((a * x).astype(np.float32).view(np.uint32) & 0xFFFF).astype(np.uint16)\n"
    r = grade_folder(load_spec(SPEC), fake(tmp_path, body), backend="host", profile=PROFILE, benchmark=False)
    assert not r.correct
    f = r.smallest_failure
    assert f.status == "fail" and "wrong output" in f.message, f.message
    detail = f.details[0]
    assert "got " in detail and "(bits 0x" in detail and "expected " in detail, detail
    got = float(detail.split("got ")[1].split(" (bits")[0])
    bits = int(detail.split("(bits ")[1].split(")")[0], 16)
    decoded = float(decode(np, np.array([bits], dtype=np.uint16), "bfloat16")[0])
    assert got == pytest.approx(decoded, rel=1e-6)   # the decoded value (printed with 7 digits)


def test_an_element_left_unwritten_is_reported_as_never_written(tmp_path):
    body = _ROUND + "\ndef solve(x, y, a):\n    y[:-1] = bits(a * x[:-1])\n"
    r = grade_folder(load_spec(SPEC), fake(tmp_path, body), backend="host", profile=PROFILE, benchmark=False)
    assert not r.correct
    f = r.smallest_failure
    assert "1 never written (still hold the poison)" in f.details[0], f.details
    assert "(bits 0x7FDA)" in f.details[0]


def test_a_canonical_nan_is_wrong_not_unwritten(tmp_path):
    body = _ROUND + "\ndef solve(x, y, a):\n    y[...] = bits(a * x)\n    y[0] = 0x7FC0\n"
    r = grade_folder(load_spec(SPEC), fake(tmp_path, body), backend="host", profile=PROFILE, benchmark=False)
    assert not r.correct
    detail = r.smallest_failure.details[0]
    assert "1 NaN" in detail and "never written" not in detail and "(bits 0x7FC0)" in detail, detail


def test_the_stub_fails_as_never_written():
    r = grade_folder(load_spec(SPEC), COURSE / "student_template" / "ex92_scale_bf16", backend="host",
                     profile=PROFILE, benchmark=False)
    assert not r.correct and "never written" in r.smallest_failure.details[0]


# -- negative controls -----------------------------------------------------------------------------------
def test_the_controls_tell_right_from_wrong_and_skip_low_precision_with_its_reason():
    spec = load_spec(SPEC)
    why = applicable(spec, "low_precision")
    assert why and "bfloat16" in why and "2^-8" in why
    results = {c.name: c for c in run_controls(spec, examples=4)}
    assert results["oracle"].passed is True, results["oracle"].diagnosis
    for name in ("all_zero", "perturbed", "partial", "off_by_one"):
        assert results[name].ok and results[name].passed is False, (name, results[name].diagnosis)
    assert "never written" in results["partial"].details[0], results["partial"].details
    low = results["low_precision"]
    assert low.passed is None and low.diagnosis == f"not applicable: {why}"
    assert all(c.ok for c in results.values()), [(c.name, c.diagnosis) for c in results.values() if not c.ok]


# -- --sanitize / --profile runner -------------------------------------------------------------------------
def test_the_sanitize_runner_poisons_a_bfloat16_output_in_its_bits():
    """grader.sanitize_run.allocate (run under compute-sanitizer on the GPU; numpy stands in for CuPy)."""
    import types

    from grader.cases import parse_token
    from grader.sanitize_run import allocate

    class NumpyAsCupy:
        cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(deviceSynchronize=lambda: None))

        def __getattr__(self, name):  # noqa: ANN001, ANN204
            return getattr(np, name)

    spec = load_spec(SPEC)
    args, allocs = allocate(spec, parse_token(spec, "n=33/x=0,a=0/seed=5"), NumpyAsCupy())
    x, y, a = args
    assert x.dtype == np.float32 and y.dtype == np.uint16 and y.shape == (33,) and np.all(y == 0x7FDA)
    assert [(d["name"], d["bytes"]) for d in allocs] == [("x", 132), ("y", 66)]


# -- variants: in place, norm-wise tolerance, type variable -------------------------------------------------
def _variant(tmp_path, old: str, new: str):
    import shutil
    folder = tmp_path / "ex92_scale_bf16"
    shutil.copytree(SPEC.parent, folder)
    spec_file = folder / "spec.toml"
    text = spec_file.read_text()
    for o, n in zip(old.split("|"), new.split("|")):
        assert o in text, o
        text = text.replace(o, n)
    spec_file.write_text(text)
    return load_spec(spec_file)


def test_an_in_place_bfloat16_output_starts_from_its_drawn_bits_and_is_compared_decoded(tmp_path):
    spec = _variant(tmp_path, 'shape = ["n"] }]\nscalars|[[edge_cases]]\nn = 1\n',
                    'shape = ["n"], inplace = true }]\nscalars|[[values.y]]\nkind = "normal"\nmean = 0\nstd = 1\n'
                    '[[edge_cases]]\nn = 1\n')
    (spec.directory / "reference.py").write_text("def reference(xp, x, y, a):\n    return a * x.astype(xp.float64) + y\n")
    inst = Instance(spec, HostBackend(), load_oracle(spec), edge_cases(spec, PROFILE, seed=0)[1])
    try:
        inst.reset()
        y = inst.arrays["y"].array
        start = inst.values["y"]
        assert y.dtype == np.uint16 and np.array_equal(y, start)   # not poisoned
        message, details = inst.check()
        assert message and "never written" not in details[0]
        a, x = np.float32(inst.values["a"].item()), inst.values["x"]
        y[...] = _bf16(a * x + decode(np, start, "bfloat16"))
        assert inst.check() == ("", [])
    finally:
        inst.free()


def test_a_normwise_bfloat16_tolerance_uses_its_eps(tmp_path):
    from grader.compare import resolve_normwise
    spec = _variant(tmp_path, 'rtol = "eps"\natol = 0', 'normwise = "2 * eps"')
    tol = spec.tolerances["bfloat16"]
    assert not tol.elementwise and resolve_normwise(tol, "bfloat16", {"n": 8}) == 2.0 ** -6
    r = grade_folder(spec, SOLUTION, backend="host", profile=PROFILE, benchmark=False)
    assert r.correct, r.smallest_failure


def test_a_type_variable_may_make_the_output_bfloat16(tmp_path):
    spec = _variant(tmp_path, '[signature]|dtype = "bfloat16"|[tolerance.bfloat16]|dims = { n = 2048 }',
                    '[types]\nT = ["float32", "bfloat16"]\n\n[signature]|dtype = "T"|'
                    '[tolerance.float32]\nrtol = 1e-6\natol = 0\n[tolerance.bfloat16]|'
                    'dims = { n = 2048 }\ntypes = { T = "bfloat16" }')
    body = _ROUND + "\ndef solve(x, y, a):\n    v = (a * x).astype(np.float32)\n" \
                    "    y[...] = bits(v) if y.dtype == np.uint16 else v\n"
    r = grade_folder(spec, fake(tmp_path, body), backend="host", profile=PROFILE, benchmark=False)
    assert r.correct, r.smallest_failure
    assert any("T=bfloat16" in c.description for c in r.cases) and any("T=float32" in c.description for c in r.cases)
    results = {c.name: c for c in run_controls(spec, examples=4)}
    assert all(c.ok for c in results.values()), [(c.name, c.diagnosis) for c in results.values() if not c.ok]


def test_timed_bfloat16_outputs_are_checked(tmp_path):
    """At the benchmark's shape, replays the first answer it computed: the check of the timed
    rounds' outputs (fresh inputs every round) fails it."""
    body = _ROUND + "\n_cache = {}\ndef solve(x, y, a):\n    if x.size == 2048 and 2048 in _cache:\n" \
                    "        y[...] = _cache[2048]\n        return\n    y[...] = bits(a * x)\n" \
                    "    if x.size == 2048:\n        _cache[2048] = y.copy()\n"
    r = grade_folder(load_spec(SPEC), fake(tmp_path, body), backend="host", profile=PROFILE, reference=SOLUTION,
                     policy=StopPolicy(min_samples=5, max_seconds=0.5, warmup_ms=1))
    failures = [b.submission.failure for b in r.benchmarks if b.submission.failure]
    drawn = [c for c in r.cases if c.origin != "benchmark"]
    assert drawn and all(c.status == "pass" for c in drawn), r.smallest_failure   # right when checked once
    assert failures and "input set" in failures[0] and "wrong output (y: " in failures[0], failures
    assert not r.correct and r.score.total == 0
