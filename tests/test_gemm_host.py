"""The GEMM exercises' correctness rules on the CPU: the norm-wise tolerance passes float32
accumulation in any order and fails what the issue names (all-zero, transposed output, half
precision inputs or accumulators); bfloat16 inputs arrive as bits and decode exactly."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from grader.cases import PROFILES
from grader.dtypes import decode, encode
from grader.spec import EdgeCase
from tests.conftest import fake_submission as fake, grade_folder, spec_of

GEMMS = ["ex09_gemm_naive", "ex10_gemm_smem", "ex11_gemm_regtile", "ex12_gemm_tensorcore"]
# numpy fakes: the spec forbids matmul/dot/@ in solution.py, so products are written out.
DECODE = """
import numpy as np
def f32(x):
    return (x.astype(np.uint32) << 16).view(np.float32) if x.dtype == np.uint16 else x.astype(np.float32)
"""
EXACT = DECODE + """
def solve(a, b, c):
    a, b = f32(a).astype(np.float64), f32(b).astype(np.float64)
    c[...] = (a[:, :, None] * b[None, :, :]).sum(axis=1)
"""
SEQUENTIAL_FP32 = DECODE + """
def solve(a, b, c):          # the naive kernel's order: one float32 FMA chain per output
    a, b = f32(a), f32(b)
    acc = np.zeros(c.shape, np.float32)
    for k in range(a.shape[1]):
        acc += a[:, k:k + 1] * b[k:k + 1, :]
    c[...] = acc
"""
SPOILED = {
    "all_zero": "    c[...] = 0\n",
    "transposed": "    c.reshape(-1)[...] = np.ascontiguousarray(c.T).reshape(-1)\n",
    "one_element": "    c[-1, -1] = 0.0\n",
    "nan": "    c[0, 0] = np.nan\n",
    "inf": "    c[0, 0] = np.inf\n",
}
FP16_INPUTS = DECODE + """
def solve(a, b, c):          # inputs rounded to float16, as a lower-precision shortcut would
    a, b = f32(a).astype(np.float16).astype(np.float64), f32(b).astype(np.float16).astype(np.float64)
    c[...] = (a[:, :, None] * b[None, :, :]).sum(axis=1)
"""
FP16_ACCUMULATE = DECODE + """
def solve(a, b, c):          # mma with float16 accumulators: every partial sum rounded to float16
    a, b = f32(a), f32(b)
    acc = np.zeros(c.shape, np.float16)
    for k in range(a.shape[1]):
        acc = (acc.astype(np.float32) + a[:, k:k + 1] * b[k:k + 1, :]).astype(np.float16)
    c[...] = acc
"""
SMALL_EDGES = ((1, 1, 1), (17, 17, 17), (3, 5, 4099), (33, 31, 300), (16, 16, 16))


def small(name: str):
    spec = spec_of(name)
    edges = tuple(EdgeCase((("M", m), ("N", n), ("K", k))) for m, n, k in SMALL_EDGES)
    return replace(spec, edge_cases=edges)


PROFILE = replace(PROFILES["quick"], examples=6, max_elements=2**12)


def run(name: str, tmp_path, body: str):
    return grade_folder(small(name), fake(tmp_path, body), backend="host", profile=PROFILE, benchmark=False)


@pytest.mark.parametrize("name", GEMMS)
@pytest.mark.parametrize("body", [EXACT, SEQUENTIAL_FP32], ids=["float64", "float32-sequential"])
def test_correct_products_pass(name: str, body: str, tmp_path) -> None:
    r = run(name, tmp_path, body)
    assert r.status == "graded", r.reason
    assert r.correct, r.smallest_failure


@pytest.mark.parametrize("spoil", sorted(SPOILED))
def test_spoiled_products_fail_with_the_norm_wise_error(spoil: str, tmp_path) -> None:
    r = run("ex11_gemm_regtile", tmp_path, EXACT + SPOILED[spoil])
    assert not r.correct and r.score.total == 0
    text = " ".join(r.smallest_failure.details)
    assert "norm-wise relative error" in text, text
    if spoil in ("nan", "inf"):
        assert "norm-wise relative error inf" in text


def test_half_precision_inputs_fail_an_fp32_exercise(tmp_path) -> None:
    r = run("ex11_gemm_regtile", tmp_path, FP16_INPUTS)
    assert not r.correct
    assert "norm-wise relative error" in r.smallest_failure.details[0]


def test_float16_accumulators_fail_ex12(tmp_path) -> None:
    r = run("ex12_gemm_tensorcore", tmp_path, FP16_ACCUMULATE)
    assert not r.correct and r.score.total == 0


def test_ex12_draws_both_half_formats_and_passes_bf16_as_bits(tmp_path) -> None:
    body = EXACT.replace("def solve(a, b, c):", "import os\ndef solve(a, b, c):\n"
                         "    assert a.dtype in (np.float16, np.uint16) and a.dtype == b.dtype, a.dtype")
    r = run("ex12_gemm_tensorcore", tmp_path, body)
    assert r.correct, r.smallest_failure
    kinds = {c.description.split("T=")[1].split()[0].strip(",;)") for c in r.cases if "T=" in c.description}
    assert kinds == {"float16", "bfloat16"}, [c.description for c in r.cases]


@pytest.mark.parametrize("name", GEMMS)
def test_matrix_products_are_forbidden_in_the_source(name: str, tmp_path) -> None:
    for body in ("import numpy as np\ndef solve(a, b, c):\n    c[...] = a @ b\n",
                 "import numpy as np\ndef solve(a, b, c):\n    np.matmul(a, b, out=c)\n",
                 "import cupy\ndef solve(a, b, c):\n    c[...] = cupy.dot(a, b)\n"):
        r = grade_folder(small(name), fake(tmp_path, body), backend="host", profile=PROFILE, benchmark=False)
        assert r.status == "not_graded" and r.reason_kind == "forbidden", r.reason
        assert "forbids" in r.reason
    ok = '"""C = A @ B, written out."""\nimport functools\n\n@functools.lru_cache\ndef plan(n):\n    return n\n' + EXACT
    r = grade_folder(small(name), fake(tmp_path, ok), backend="host", profile=PROFILE, benchmark=False)
    assert r.status == "graded"   # "@" in a docstring or a decorator is not a product


# -- bfloat16 as bits ---------------------------------------------------------------------------------------
def test_bfloat16_round_trip_and_rounding() -> None:
    x = np.array([1.0, -2.5, 3.140625, 1 + 2**-8, 1 + 3 * 2**-8, 1e38, np.inf, -0.0, np.nan], np.float64)
    bits = encode(np, x, "bfloat16")
    assert bits.dtype == np.uint16
    back = decode(np, bits, "bfloat16")
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to even (1.0); 1 + 3*2^-8 goes up to 1 + 2^-6
    assert back[:4].tolist() == [1.0, -2.5, 3.140625, 1.0]
    assert back[4] == 1 + 2**-6
    assert np.isclose(back[5], 1e38, rtol=2**-8) and np.isinf(back[6]) and np.signbit(back[7]) and np.isnan(back[8])
    assert encode(np, back[:8].astype(np.float64), "bfloat16").tolist() == bits[:8].tolist()  # exact: idempotent
