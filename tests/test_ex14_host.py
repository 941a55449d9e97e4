"""ex14_flash_attention without a GPU: the oracle against a direct computation, and the spec's
tolerance against a numpy model of the reference kernel's arithmetic (FlashAttention-2: 64-key
tiles, an online softmax in float32, P rounded to the input type before P V, float32
accumulation): the model passes on every edge case the spec lists and on the large-score inputs,
and the same model without the rescaling of O and l when the running max grows fails."""
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


def within(o, lse, q, k, v, causal) -> bool:
    ref = oracle()
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
        assert within(o, lse, q, k, v, causal), (dims, causal)


def test_without_rescaling_the_tolerance_fails():
    dims = {"B": 1, "H": 2, "Sq": 100, "Sk": 300, "D": 64}
    q, k, v = inputs(dims, "float16", 1.0, 2)
    assert within(*flash_model(q, k, v, False, "float16"), q, k, v, 0)
    assert not within(*flash_model(q, k, v, False, "float16", rescale=False), q, k, v, 0)
