"""ex14_flash_attention without a GPU: the oracle against a direct computation, and the spec's
tolerance against a numpy model of the reference kernel's arithmetic (FlashAttention-2: 64-key
tiles, an online softmax in float32, P rounded to the input type before P V, float32
accumulation): the model passes on every edge case the spec lists and on the large-score inputs,
and the same model without the rescaling of O and l when the running max grows fails. A constructed
row whose small weights fall below float16's normal range (2^-14) shows why the float16 bound has
its subnormal term, and that the term still fails a kernel that drops those weights."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from tests.conftest import ROOT, spec_of

EX = ROOT / "exercises" / "ex14_flash_attention"


def oracle():
    spec = importlib.util.spec_from_file_location("ex14_reference", EX / "reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def to_bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 to the nearest bfloat16 (ties to even), returned as float32."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.view(np.float32)


def half(x: np.ndarray, kind: str) -> np.ndarray:
    return x.astype(np.float16).astype(np.float32) if kind == "float16" else to_bf16(x.astype(np.float32))


def flash_model(q, k, v, causal: bool, kind: str, rescale: bool = True):
    """The reference kernel's arithmetic in numpy (float32, P rounded to ``kind``)."""
    b, h, sq, d = q.shape
    sk = k.shape[2]
    scale_log2 = np.float32(np.log2(np.e) / np.sqrt(d))
    o = np.zeros((b, h, sq, d), np.float32)
    lse = np.zeros((b, h, sq), np.float32)
    rows = np.arange(sq)[:, None]
    for i in range(b):
        for j in range(h):
            m = np.full((sq, 1), -np.inf, np.float32)
            l = np.zeros((sq, 1), np.float32)
            acc = np.zeros((sq, d), np.float32)
            for n0 in range(0, sk, 64):
                keys = np.arange(n0, min(n0 + 64, sk))[None, :]
                s = (q[i, j] @ k[i, j, n0:n0 + 64].T).astype(np.float32) * scale_log2
                s = np.where(causal & (keys > rows), -np.inf, s).astype(np.float32)
                m_new = np.maximum(m, s.max(axis=1, keepdims=True))
                base = np.where(np.isinf(m_new), 0, m_new).astype(np.float32)
                alpha = np.exp2(m - base).astype(np.float32)
                p = np.exp2(s - base).astype(np.float32)
                if rescale:
                    l, acc = l * alpha, acc * alpha
                l = l + p.sum(axis=1, keepdims=True, dtype=np.float32)
                acc = acc + half(p, kind) @ v[i, j, n0:n0 + 64]
                m = m_new
            o[i, j] = acc / l
            lse[i, j] = ((m + np.log2(l)) * np.log(2))[:, 0]
    return o, lse


def inputs(dims: dict, kind: str, std: float, seed: int):
    rs = np.random.RandomState(seed)
    b, h, sq, sk, d = (dims[x] for x in ("B", "H", "Sq", "Sk", "D"))
    q = half(rs.normal(0, std, (b, h, sq, d)).astype(np.float32), kind)
    k = half(rs.normal(0, std, (b, h, sk, d)).astype(np.float32), kind)
    v = half(rs.normal(0, 1, (b, h, sk, d)).astype(np.float32), kind)
    return q, k, v


def graded(kind: str, *xs):
    """``xs`` (float32 arrays of ``kind`` values) as the grader hands them to reference.py: float16
    inputs as float16 arrays, bfloat16 ones decoded to float32."""
    return tuple(x.astype(np.float16) if kind == "float16" else x for x in xs)


def within(o, lse, q, k, v, causal, kind) -> bool:
    ref = oracle()
    q, k, v = graded(kind, q, k, v)
    o_ref, lse_ref = ref.reference(np, q, k, v, causal)
    o_tol, lse_tol = ref.magnitude(np, q, k, v, causal)
    return bool((np.abs(o - o_ref) <= o_tol).all() and (np.abs(lse - lse_ref) <= lse_tol).all())


def test_the_oracle_matches_a_direct_computation():
    q, k, v = inputs({"B": 2, "H": 2, "Sq": 5, "Sk": 7, "D": 64}, "float16", 1.0, 0)
    o, lse = oracle().reference(np, q, k, v, 1)
    s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k.astype(np.float64)) / 8.0
    s = np.where(np.triu(np.ones((5, 7), bool), 1), -np.inf, s)
    w = np.exp(s)
    np.testing.assert_allclose(lse, np.log(w.sum(-1)), rtol=1e-12)
    np.testing.assert_allclose(o, np.einsum("bhqk,bhkd->bhqd", w / w.sum(-1, keepdims=True), v), rtol=1e-10)
    assert np.isfinite(o).all() and o[0, 0, 0] == pytest.approx(v[0, 0, 0].astype(np.float64))  # row 0 sees key 0


SMALL = [e for e in spec_of("ex14_flash_attention").edge_cases if e.as_dict()["Sq"] * e.as_dict()["Sk"] <= 2**20]


@pytest.mark.parametrize("kind", ["float16", "bfloat16"])
@pytest.mark.parametrize("std", [1.0, 5.0])
@pytest.mark.parametrize("edge", SMALL, ids=lambda e: ",".join(f"{k}={v}" for k, v in e.as_dict().items()))
def test_a_flash_attention_model_is_within_the_tolerance(edge, std, kind):
    dims = edge.as_dict()
    q, k, v = inputs(dims, kind, std, 1)
    for causal in (0, 1):
        o, lse = flash_model(q, k, v, bool(causal), kind)
        assert within(o, lse, q, k, v, causal, kind), (dims, causal)


def test_without_rescaling_the_tolerance_fails():
    dims = {"B": 1, "H": 2, "Sq": 100, "Sk": 300, "D": 64}
    q, k, v = inputs(dims, "float16", 1.0, 2)
    assert within(*flash_model(q, k, v, False, "float16"), q, k, v, 0, "float16")
    assert not within(*flash_model(q, k, v, False, "float16", rescale=False), q, k, v, 0, "float16")


# -- float16's subnormal weights ------------------------------------------------------------------
# Weights p_j = exp(s_j - m) in units of 2^-24 (float16's subnormal spacing): 2^-26 .. 2^-20, each
# about 0.25 .. 0.45 units from the nearest float16 below it, so rounding P to float16 lowers every
# one by about that much, 2^-26 .. 2^-25.2 absolutely (up to 100 % of the smallest).
TINY = [0.25, 0.45, 0.45, 0.45, 1.45, 3.45, 15.45]
TINY_AT = [1, 2, 5, 30, 40, 66, 71]            # keys; key 0 dominates (p = 1), every other key has v = 0


def subnormal_row(kind: str):
    """One query (D = 64, no mask) over 72 keys in two 64-key tiles: key 0 with score 0 and v = 0
    exactly, keys TINY_AT with weights TINY 2^-24 and |v| = 1 (the sign alternating along d, so no
    two keys' errors cancel), the rest scores of -40 and v = 0. q = 8 e_0, so s_j = k[j, 0]."""
    d, sk = 64, 72
    q = np.zeros((1, 1, 1, d), np.float32)
    q[..., 0] = 8.0
    k = np.zeros((1, 1, sk, d), np.float32)
    v = np.zeros((1, 1, sk, d), np.float32)
    k[0, 0, :, 0] = -40.0
    k[0, 0, 0, 0] = 0.0
    sign = np.where(np.arange(d) % 2 == 0, 1.0, -1.0)
    for j, t in zip(TINY_AT, TINY):
        k[0, 0, j, 0] = np.log(t) - 24 * np.log(2.0)
        v[0, 0, j] = sign
    return half(q, kind), half(k, kind), half(v, kind)


def worst(o, lse, q, k, v, kind, *, term: bool = True):
    """max err / bound of o and of lse on the no-mask row; term=False: the float16 bound without its
    subnormal term (magnitude of the same values as float32 arrays, the bfloat16 path)."""
    ref = oracle()
    gq, gk, gv = graded(kind, q, k, v) if term else (q, k, v)
    o_ref, lse_ref = ref.reference(np, gq, gk, gv, 0)
    o_tol, lse_tol = ref.magnitude(np, gq, gk, gv, 0)
    return float((np.abs(o - o_ref) / o_tol).max()), float((np.abs(lse - lse_ref) / lse_tol).max())


def test_the_constructed_row_has_subnormal_weights():
    q, k, v = subnormal_row("float16")
    s = (q[0, 0] @ k[0, 0].T / 8.0).astype(np.float64)[0]
    p = np.exp(s - s.max())
    assert s.argmax() == 0 and p[0] == 1 and not v[0, 0, 0].any()
    tiny = p[TINY_AT] / 2.0 ** -24
    assert np.allclose(tiny, TINY, rtol=0.02), tiny
    assert (p[TINY_AT] < 2.0 ** -14).all() and p[TINY_AT].min() < 2.0 ** -25 < p[TINY_AT].max() < 2.0 ** -19
    # numpy's float16 has IEEE 754 binary16's subnormals (spacing 2^-24): each weight loses 0.25 .. 0.45 units
    lost = (p[TINY_AT] - p[TINY_AT].astype(np.float16).astype(np.float64)) / 2.0 ** -24
    assert ((0.2 < lost) & (lost < 0.5)).all(), lost


def test_float16_subnormal_weights_need_the_absolute_term():
    """FlashAttention-2's arithmetic (P rounded to float16, float32 elsewhere) on the constructed row:
    beyond the bound without the subnormal term (err / bound ~ 8, up to 64 for weights just below
    2^-25), within it with the term (at most 1/2: 2^-25 per weight against 2^-24)."""
    q, k, v = subnormal_row("float16")
    o, lse = flash_model(q, k, v, False, "float16")
    without_term, _ = worst(o, lse, q, k, v, "float16", term=False)
    with_term, lse_ratio = worst(o, lse, q, k, v, "float16")
    assert without_term > 4, without_term
    assert with_term <= 0.5 and lse_ratio <= 1, (with_term, lse_ratio)
    assert within(o, lse, q, k, v, 0, "float16")


def test_bfloat16_needs_no_subnormal_term():
    """The same row in bfloat16 (float32's exponent range: the weights stay normal, each off by at
    most 2^-8 relatively) passes the bound without any absolute term, and reference.py adds none."""
    q, k, v = subnormal_row("bfloat16")
    o, lse = flash_model(q, k, v, False, "bfloat16")
    assert max(worst(o, lse, q, k, v, "bfloat16")) <= 1
    ref = oracle()
    q16, k16, v16 = subnormal_row("float16")
    o32, lse32 = ref.magnitude(np, q16, k16, v16, 0)          # float32 arrays: no term
    o16, lse16 = ref.magnitude(np, *graded("float16", q16, k16, v16), 0)
    assert np.array_equal(lse16, lse32)
    extra = (o16 - o32)[0, 0, 0]
    assert np.allclose(extra, 2.0 ** -24 * len(TINY_AT), rtol=1e-12), extra    # 2^-24 sum |v_j| over the tiny keys


def test_the_subnormal_term_still_fails_dropped_small_weights():
    """Weights below 2^-14 dropped (P flushed to zero, or keys skipped as negligible: up to 2^-14 a
    key) still fail the float16 bound on the constructed row (err / bound ~ 3); so does a missing
    rescale when the row's maximum arrives in the second tile."""
    q, k, v = subnormal_row("float16")
    o_ref, _ = oracle().reference(np, *graded("float16", q, k, v), 0)
    o_tol, _ = oracle().magnitude(np, *graded("float16", q, k, v), 0)
    w = np.exp((q[0, 0] @ k[0, 0].T / 8.0).astype(np.float64))[0]
    w[w < 2.0 ** -14] = 0
    flushed = (w / w.sum()) @ v[0, 0].astype(np.float64)
    assert (np.abs(flushed - o_ref[0, 0, 0]) / o_tol[0, 0, 0]).max() > 2
    k2, v2 = k.copy(), v.copy()
    k2[0, 0, [0, 70]] = k[0, 0, [70, 0]]                       # key 70 (second tile) dominates, v = 1
    v2[0, 0, 70] = 1.0
    assert within(*flash_model(q, k2, v2, False, "float16"), q, k2, v2, 0, "float16")
    assert not within(*flash_model(q, k2, v2, False, "float16", rescale=False), q, k2, v2, 0, "float16")
