"""ex16_paged_decode_attention, checked without a GPU: its kernels compile with NVRTC for sm_90 as
grading compiles (no spills, registers for two CTAs per SM, shared memory within 227 KB, mma.sync /
ldmatrix / cp.async in the PTX), its spec loads with its [prepare] hook and the grader draws valid
poisoned inputs through it, the float64 oracle agrees with a token-by-token computation (GQA,
uneven lengths, out-of-order tables), prepare() builds valid poisoned inputs, a numpy model of the
kernel's float32 / split-K arithmetic passes the spec's tolerance (and a wrong model fails; a
constructed sequence with weights below float16's normal range needs the bound's subnormal term),
solve's shape-only split plan covers every block of every context exactly once, and the fixtures
(tests/variants.py) change the reference where they say. The GPU runs are in tests/test_gpu.py and
benchmarks/verify_ex16.py."""
from __future__ import annotations

import importlib.util
import math
import re

import numpy as np
import pytest

from tests.conftest import ROOT
from tests.draft_kernels import nvrtc_compile

NAME = "ex16_paged_decode_attention"
EXERCISE, SOLUTION, TEMPLATE = (ROOT / d / NAME for d in ("exercises", "solutions", "student_template"))
KERNEL = SOLUTION / "kernel.cu"
ARCH = "sm_90"
MAIN = ("paged_decode_f16", "paged_decode_bf16")
THREADS, CTAS_PER_SM = 128, 2
SMEM_LIMIT = 227 * 1024


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def ref():
    return _load("ex16_reference", EXERCISE / "reference.py")


@pytest.fixture(scope="module")
def sol():
    return _load("ex16_solution", SOLUTION / "solution.py")   # compiles on the first solve only


def _defines(path):
    """{name: value text} of the PD_* #defines in the kernel.cu at ``path`` (trailing comments dropped)."""
    return {m[1]: m[2] for m in re.finditer(r"^#define (PD_\w+) (.+?)\s*(?://.*)?$", path.read_text(), re.M)}


def _nvrtc_build(path):
    """(ptxas log, PTX) of ``path`` compiled as grading does (NVRTC, sm_90)."""
    log, _cubin, ptx = nvrtc_compile(path, ARCH)
    return log, ptx


@pytest.fixture(scope="module")
def nvrtc_build():
    return _nvrtc_build(KERNEL.resolve())


def test_resources_within_budget(nvrtc_build):
    from grader.static import _parse_ptxas
    log, _ptx = nvrtc_build
    kernels = {k.name: k for k in _parse_ptxas(log)}
    assert set(MAIN) | {"paged_decode_combine"} <= set(kernels), list(kernels)
    for k in kernels.values():
        assert k.spill_store_bytes == 0 and k.spill_load_bytes == 0 and k.stack_bytes == 0, k
    for name in MAIN:
        assert kernels[name].shared_bytes == 0            # the main kernels' shared memory is dynamic
        # two CTAs of 128 threads per SM (what the shared memory allows) fit the 64K registers
        assert 128 <= kernels[name].registers <= 65536 // (THREADS * CTAS_PER_SM), kernels[name]
    assert kernels["paged_decode_combine"].registers <= 64
    assert not [ln for ln in log.splitlines() if "warning" in ln.lower()], log


def test_ptx_has_tensor_cores_ldmatrix_and_cp_async(nvrtc_build):
    _log, ptx = nvrtc_build
    for pattern in (r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32",
                    r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32",
                    r"ldmatrix\.sync\.aligned\.m8n8\.x4\.trans\.shared\.b16",
                    r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16",
                    r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16, %r\d+",   # zero-fill form
                    r"cp\.async\.wait_group 2", r"ex2\.approx"):
        assert re.search(pattern, ptx), pattern


def test_template_compiles_and_writes_nothing():
    log, ptx = _nvrtc_build((TEMPLATE / "kernel.cu").resolve())
    for name in (*MAIN, "paged_decode_combine"):
        body = re.search(rf"\.entry {name}\((.*?)\n\}}", ptx, re.S)
        assert body, name
        assert "st.global" not in body.group(1), name


def test_template_host_side_is_the_references(sol):
    """The template's launch code is given whole, so it must not cap a student's speed: its split
    plan, constants and combine launch are the reference's, and its kernel.cu defines the same
    PD_COMBINE_WARPS as its solution.py launches."""
    tpl = _load("ex16_template", TEMPLATE / "solution.py")
    for name in ("_D", "_BS", "_THREADS", "_STAGES", "_ROW", "_SMEM", "_P_MIN", "_CTAS_PER_SM", "_MAX_GROUP",
                 "_RESIDENT_PER_SM", "_COMBINE_THREADS"):
        assert getattr(tpl, name) == getattr(sol, name), name
    for B, HKV, MB in SHAPES:
        for sms in (132, 7):
            assert tpl._plan(B, HKV, MB, sms) == sol._plan(B, HKV, MB, sms), (B, HKV, MB, sms)
    assert tpl._COMBINE_THREADS == 32 * int(_defines(TEMPLATE / "kernel.cu")["PD_COMBINE_WARPS"])


def test_shared_memory_and_constants_agree(sol):
    d = _defines(KERNEL)
    assert (sol._D, sol._BS, sol._THREADS, sol._STAGES) == (int(d["PD_D"]), int(d["PD_BS"]), THREADS,
                                                           int(d["PD_STAGES"]))
    assert d["PD_ROW"] == "(PD_D + 8)" and sol._ROW == sol._D + 8 and sol._MAX_GROUP == int(d["PD_MAX_GROUP"])
    assert sol._SMEM == 4 * sol._STAGES * 2 * sol._BS * sol._ROW * 2 == 104448
    assert CTAS_PER_SM * sol._SMEM <= 228 * 1024 - CTAS_PER_SM * 1024 and sol._SMEM <= SMEM_LIMIT
    # the warps' merge reuses the pipeline's space: O (4 x 16 x D floats), m and l (4 x 16 each)
    assert 4 * 16 * sol._D * 4 + 2 * 4 * 16 * 4 <= sol._SMEM
    assert THREADS == sol._D                               # one thread per dimension in the warps' merge
    assert sol._COMBINE_THREADS == 32 * int(d["PD_COMBINE_WARPS"])
    assert (sol._ROW * 2) % 16 == 0 and (sol._ROW * 2 // 4) % 32 == 4   # 16-byte rows; ldmatrix rows 4 banks apart


def test_spec_loads_with_its_prepare_hook():
    from grader.spec import load_spec
    spec = load_spec(EXERCISE / "spec.toml")
    assert spec.prepare == "prepare" and [o.dtype for o in spec.outputs] == ["float32"] and len(spec.benchmarks) == 4


def test_the_grader_draws_valid_poisoned_inputs_through_prepare():
    """grader.instance.draw_inputs on the spec's own cases (numpy): every context within its table,
    the used blocks distinct, the poison where no sequence reads, and the oracle finite."""
    from grader.cases import PROFILES, edge_cases
    from grader.dtypes import decode
    from grader.instance import draw_inputs, load_oracle
    from grader.spec import load_spec
    spec = load_spec(EXERCISE / "spec.toml")
    oracle = load_oracle(spec)
    small = [c for c in edge_cases(spec, PROFILES["quick"], seed=0) if c.dim_dict["NB"] <= 1024]
    assert len(small) >= 4
    for case in small:
        v = draw_inputs(spec, case, np, oracle)
        table, lens = v["block_tables"], v["context_lens"]
        MB = case.dim_dict["MB"]
        assert ((1 <= lens) & (lens <= 16 * MB)).all(), case
        nbs = -(-lens // 16)
        used = np.concatenate([table[b, :n] for b, n in enumerate(nbs)])
        assert len(set(used.tolist())) == len(used), case
        assert all((table[b, n:] == 2**31 - 1).all() for b, n in enumerate(nbs)), case
        k = decode(np, v["k_cache"], case.type_dict["T"])   # bfloat16 arrives as its bits
        assert np.isnan(k[np.setdiff1d(np.arange(case.dim_dict["NB"]), used)]).all(), case
        assert np.isfinite(oracle(np, v["q"], v["k_cache"], v["v_cache"], table, lens)).all(), case


def test_static_report_of_the_solution_and_the_stub():
    """grade --compile-only's checks: compiles, solve's signature, forbidden patterns."""
    from grader.spec import load_spec
    from grader.static import nvrtc_unavailable, static_report
    why = nvrtc_unavailable()
    if why:
        pytest.skip(f"NVRTC cannot be loaded here: {why}")
    spec = load_spec(EXERCISE / "spec.toml")
    for folder in (SOLUTION, TEMPLATE):
        rep = static_report(spec, folder, ARCH)
        assert rep.compiled and not rep.problems and not rep.warnings, (folder, rep.problems, rep.warnings)


# -- the oracle -----------------------------------------------------------------------------------
def _case(seed, B, HQ, HKV, NB, MB, lens, q_std=1.0, k_std=1.0, dtype=np.float16, shuffle=True):
    rng = np.random.default_rng(seed)
    q = (rng.standard_normal((B, HQ, 128)) * q_std).astype(dtype)
    k = (rng.standard_normal((NB, 16, HKV, 128)) * k_std).astype(dtype)
    v = rng.standard_normal((NB, 16, HKV, 128)).astype(dtype)
    perm = rng.permutation(NB) if shuffle else np.arange(NB)
    table = np.zeros((B, MB), np.int32)
    used = 0
    for b, L in enumerate(lens):
        n = -(-L // 16)
        table[b, :n] = perm[used:used + n]
        table[b, n:] = rng.integers(0, NB, MB - n)        # garbage past the context
        used += n
    return q, k, v, table, np.array(lens, np.int32)


def _naive(q, k, v, table, lens):
    """Token by token, head by head, in Python floats."""
    B, HQ, D = q.shape
    G = HQ // k.shape[2]
    o = np.zeros((B, HQ, D))
    for b in range(B):
        for hq in range(HQ):
            h = hq // G
            keys = [(int(table[b, i // 16]), i % 16) for i in range(int(lens[b]))]
            s = [sum(float(q[b, hq, d]) * float(k[blk, sl, h, d]) for d in range(D)) / math.sqrt(D) for blk, sl in keys]
            m = max(s)
            w = [math.exp(x - m) for x in s]
            tot = sum(w)
            for (blk, sl), wi in zip(keys, w):
                o[b, hq] += wi / tot * v[blk, sl, h].astype(np.float64)
    return o


@pytest.mark.parametrize("B, HQ, HKV, NB, MB, lens", [
    (1, 1, 1, 4, 1, [1]),
    (2, 4, 1, 8, 2, [16, 17]),                 # MQA-like, a block multiple and one past it
    (3, 8, 2, 16, 4, [5, 64, 33]),             # GQA, G = 4, uneven
    (2, 6, 6, 12, 5, [70, 2]),                 # MHA
])
def test_oracle_matches_token_by_token(ref, B, HQ, HKV, NB, MB, lens):
    q, k, v, table, cl = _case(1, B, HQ, HKV, NB, MB, lens)
    want = _naive(q, k, v, table, cl)
    got = ref.reference(np, q, k, v, table, cl)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)
    mag = ref.magnitude(np, q, k, v, table, cl)
    assert mag.shape == got.shape and (mag > 0).all()


def test_oracle_ignores_what_lies_past_the_context(ref):
    q, k, v, table, cl = _case(2, 2, 4, 2, 16, 4, [17, 3])
    base = ref.reference(np, q, k, v, table, cl)
    k2, v2, t2 = k.copy(), v.copy(), table.copy()
    t2[0, 2:] = 10**6
    t2[1, 1:] = -5
    k2[table[0, 1], 1:] = np.nan
    v2[table[1, 0], 3:] = np.nan
    assert np.array_equal(ref.reference(np, q, k2, v2, t2, cl), base)


def test_oracle_survives_scores_of_90(ref):
    q, k, v, table, cl = _case(3, 1, 2, 1, 8, 8, [128])
    q[:] = np.float16(2.82)
    k[:] = np.float16(2.83)
    o = ref.reference(np, q, k, v, table, cl)
    assert np.isfinite(o).all()
    q[:] = np.float16(-2.82)
    assert np.isfinite(ref.reference(np, q, k, v, table, cl)).all()


def test_prepare_builds_valid_poisoned_inputs(ref):
    rs = np.random.RandomState(5)
    B, HQ, HKV, NB, MB = 6, 8, 2, 200, 12
    q, k, v, _t, _l = _case(4, B, HQ, HKV, NB, MB, [1] * B)
    raw_t = rs.randint(0, 64, (B, MB)).astype(np.int32)
    raw_l = np.array([1, 16, 192, 193, 131072, 77], np.int32)
    q2, k2, v2, t2, l2 = ref.prepare(np, rs, q, k, v, raw_t, raw_l)
    assert list(l2) == [1, 16, 192, 1, 1 + 131071 % 192, 77] and l2.dtype == np.int32
    nbs = -(-l2 // 16)
    used = np.concatenate([t2[b, :nbs[b]] for b in range(B)])
    assert len(set(used.tolist())) == len(used) and ((0 <= used) & (used < NB)).all()   # distinct: NB holds them
    assert sorted(used.tolist()) != list(range(len(used)))                              # not in order
    for b in range(B):
        assert (t2[b, nbs[b]:] == ref.POISON_INDEX).all()
        last = t2[b, nbs[b] - 1]
        tail = l2[b] - (nbs[b] - 1) * 16
        assert np.isnan(k2[last, tail:].astype(np.float32)).all() and np.isnan(v2[last, tail:].astype(np.float32)).all()
        assert not np.isnan(k2[t2[b, :nbs[b] - 1]].astype(np.float32)).any()
        assert not np.isnan(v2[last, :tail].astype(np.float32)).any()
    unused = np.setdiff1d(np.arange(NB), used)
    assert np.isnan(k2[unused].astype(np.float32)).all()
    assert np.isfinite(ref.reference(np, q2, k2, v2, t2, l2)).all()
    # too few blocks for distinct ones: the drawn entries (mod NB) are kept, shared
    _q, _k, _v, t3, l3 = ref.prepare(np, rs, q, k[:20], v[:20], raw_t, np.full(B, 64, np.int32))
    assert (t3[:, :4] == raw_t[:, :4] % 20).all() and (t3[:, 4:] == ref.POISON_INDEX).all()
    assert np.isfinite(ref.reference(np, q2, _k, _v, t3, l3)).all()


def test_prepare_bfloat16_nan_bits(ref):
    rs = np.random.RandomState(0)
    k = np.full((4, 16, 1, 128), 0x3F80, np.uint16)        # bfloat16 bits of 1.0
    _q, k2, _v, _t, _l = ref.prepare(np, rs, np.zeros((1, 1, 128), np.uint16), k, k.copy(),
                                     np.zeros((1, 2), np.int32), np.array([3], np.int32))
    assert ((k2 == 0x7FC0).sum(axis=(1, 2, 3)) == [13 * 128 if b == _t[0, 0] else 16 * 128 for b in range(4)]).all()


# -- the tolerance: a model of the kernel's arithmetic passes, wrong ones fail --------------------
def _model(q, k, v, table, lens, P=2, rescale=True, pv_dtype=np.float16, round_p=None):
    """The reference's arithmetic in numpy float32: splits of P blocks, per block S = Q K^T in fp32,
    online softmax in base 2, P rounded to pv_dtype (or by round_p) for P V, the splits merged by
    their LSE."""
    f32 = np.float32
    B, HQ, D = q.shape
    G = HQ // k.shape[2]
    c = f32(1.4426950408889634 / math.sqrt(D))
    o = np.zeros((B, HQ, D), f32)
    for b in range(B):
        nb = -(-int(lens[b]) // 16)
        for hq in range(HQ):
            h = hq // G
            parts = []
            for s0 in range(0, nb, P):
                m, l, acc = f32(-np.inf), f32(0), np.zeros(D, f32)
                for j in range(s0, min(s0 + P, nb)):
                    n = min(16, int(lens[b]) - 16 * j)
                    K = k[table[b, j], :n, h].astype(f32)
                    V = v[table[b, j], :n, h].astype(f32)
                    s = (K @ q[b, hq].astype(f32)) * c
                    mn = max(m, s.max()) if rescale else s.max()
                    a = np.exp2(m - mn) if rescale else f32(1)
                    p = np.exp2(s - mn).astype(f32)
                    l = l * a + p.sum()
                    pr = round_p(p) if round_p else p.astype(pv_dtype).astype(f32)
                    acc = acc * a + pr @ V
                    m = mn
                parts.append((m + np.log2(l), acc / l))
            M = max(x for x, _ in parts)
            w = np.array([np.exp2(x - M) for x, _ in parts], f32)
            o[b, hq] = sum(wi * y for wi, (_, y) in zip(w, parts)) / w.sum()
    return o


@pytest.mark.parametrize("q_std, k_std", [(1.0, 1.0), (4.0, 4.0)])
def test_tolerance_passes_the_kernels_arithmetic_and_fails_a_missing_rescale(ref, q_std, k_std):
    q, k, v, table, cl = _case(7, 3, 8, 2, 64, 16, [1, 100, 250], q_std, k_std)
    want, mag = ref.reference(np, q, k, v, table, cl), ref.magnitude(np, q, k, v, table, cl)
    err = np.abs(_model(q, k, v, table, cl) - want)
    assert (err <= mag).all(), float((err / mag).max())
    bad = np.abs(_model(q, k, v, table, cl, rescale=False) - want)
    assert (bad > mag).any()


def test_tolerance_fails_an_off_by_one_context(ref):
    q, k, v, table, cl = _case(8, 2, 4, 1, 16, 4, [3, 40])
    want, mag = ref.reference(np, q, k, v, table, cl), ref.magnitude(np, q, k, v, table, cl)
    assert (np.abs(ref.reference(np, q, k, v, table, cl + 1) - want) > mag).any()


def test_tolerance_fails_fp16_score_accumulation(ref):
    """q.k summed in float16 (the classic half2 kernel) at scores near 90 errs by far more than ds."""
    q, k, v, table, cl = _case(9, 1, 2, 1, 8, 2, [20])
    rng = np.random.default_rng(0)
    q[:] = rng.uniform(2.8, 2.85, q.shape).astype(np.float16)
    k[:] = rng.uniform(2.8, 2.85, k.shape).astype(np.float16)
    want, mag = ref.reference(np, q, k, v, table, cl), ref.magnitude(np, q, k, v, table, cl)
    G = 2
    o = np.zeros_like(want)
    for hq in range(2):
        s = np.zeros(20, np.float16)
        keys = [k[table[0, i // 16], i % 16, hq // G] for i in range(20)]
        for i, key in enumerate(keys):
            for d in range(128):
                s[i] = np.float16(s[i] + np.float16(q[0, hq, d] * key[d]))
        s = s.astype(np.float64) / math.sqrt(128)
        w = np.exp(s - s.max())
        o[0, hq] = (w / w.sum()) @ np.array([v[table[0, i // 16], i % 16, hq // G] for i in range(20)], np.float64)
    assert (np.abs(o - want) > mag).any()


def _to_bf16(x):
    """float32 rounded to the nearest bfloat16 (ties to even), as float32."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).view(np.float32)


# Weights p_j = exp(s_j - max s) in units of 2^-24, float16's subnormal spacing: 2^-26 .. 2^-20, each
# 0.25 .. 0.45 units above a float16, so rounding P to float16 lowers each by 2^-26 .. 2^-25.2.
TINY = [0.25, 0.45, 0.45, 0.45, 1.45, 3.45, 15.45]
TINY_AT = [1, 2, 5, 17, 20, 30, 31]                 # tokens of split 0 (blocks 0 and 1 at P = 2), with token 0


def _subnormal_sequence(kind="float16"):
    """One sequence of 40 tokens (3 blocks, in order), one head: token 0 scores 0 with v = 0
    exactly, tokens TINY_AT weights TINY 2^-24 with |v| = 1 (the sign alternating along d), the
    rest scores of about -40 with v = 0. q = 8 e_0, so s_j = 8 k[j, 0] / sqrt(128). float16: as
    float16 arrays; bfloat16: the values rounded to bfloat16, as float32 (decoded, as the grader
    hands them to reference.py)."""
    L = 40
    q = np.zeros((1, 1, 128), np.float32)
    q[..., 0] = 8.0
    k = np.zeros((4, 16, 1, 128), np.float32)
    v = np.zeros((4, 16, 1, 128), np.float32)
    tok_k = np.full(L, -40.0 * math.sqrt(128) / 8)
    tok_k[0] = 0.0
    sign = np.where(np.arange(128) % 2 == 0, 1.0, -1.0)
    for j, t in zip(TINY_AT, TINY):
        tok_k[j] = (math.log(t) - 24 * math.log(2.0)) * math.sqrt(128) / 8
        v[j // 16, j % 16, 0] = sign
    for j in range(L):
        k[j // 16, j % 16, 0, 0] = tok_k[j]
    table = np.array([[0, 1, 2, 3]], np.int32)
    cast = (lambda x: x.astype(np.float16)) if kind == "float16" else _to_bf16
    return cast(q), cast(k), cast(v), table, np.array([L], np.int32)


def test_the_subnormal_sequence_has_subnormal_weights():
    q, k, v, table, cl = _subnormal_sequence()
    keys = k[:, :, 0].reshape(-1, 128)[:40].astype(np.float64)
    s = keys @ q[0, 0].astype(np.float64) / math.sqrt(128)
    p = np.exp(s - s.max())
    assert s.argmax() == 0 and p[0] == 1 and not v[0, 0, 0].any()
    assert np.allclose(p[TINY_AT] / 2.0 ** -24, TINY, rtol=0.02), p[TINY_AT] / 2.0 ** -24
    lost = (p[TINY_AT] - p[TINY_AT].astype(np.float16).astype(np.float64)) / 2.0 ** -24   # IEEE binary16 subnormals
    assert ((0.2 < lost) & (lost < 0.5)).all(), lost


def _f16_ftz(p):
    """P rounded to float16 with the subnormal results flushed to zero (not what cvt.rn.f16x2.f32
    does; a kernel that did so, or skipped the keys it deemed negligible, loses up to 2^-14 a key)."""
    h = p.astype(np.float16).astype(np.float32)
    return np.where(h < np.float32(2.0 ** -14), np.float32(0), h)


def test_tolerance_needs_the_subnormal_term_for_float16(ref):
    """The kernel's arithmetic (P rounded to float16 in P V, split-K merged by LSE) on the constructed
    sequence: beyond the float16 bound without the subnormal term (err / bound ~ 77 here: a weight
    rounded to 0 errs by 100 %, 2^11 u_T), within it with the term (at most 1/2: 2^-25 a weight
    against 2^-24)."""
    q, k, v, table, cl = _subnormal_sequence()
    want, mag = ref.reference(np, q, k, v, table, cl), ref.magnitude(np, q, k, v, table, cl)
    # the float16 bound without the term: the bfloat16 path's (float32 arrays) with u_T 2^-11, not 2^-8
    keys, vals = (x[:, :, 0].reshape(-1, 128)[:40].astype(np.float64) for x in (k, v))
    s = keys @ q[0, 0].astype(np.float64) / math.sqrt(128)
    w = np.exp(s - s.max())
    pv = (w / w.sum()) @ np.abs(vals)
    mag_bf16_path = ref.magnitude(np, *(x.astype(np.float32) for x in (q, k, v)), table, cl)
    mag_no_term = mag_bf16_path - (2.0 ** -8 - 2.0 ** -11) * pv
    assert np.allclose(mag - mag_no_term, 2.0 ** -24 * len(TINY_AT), rtol=1e-9, atol=0)    # 2^-24 sum |v_j|
    err = np.abs(_model(q, k, v, table, cl) - want)
    assert (err / mag_no_term).max() > 16, float((err / mag_no_term).max())
    assert (err / mag).max() <= 0.5, float((err / mag).max())


def test_the_subnormal_term_still_fails_wrong_kernels(ref):
    """With the term, P below 2^-14 flushed to zero still fails on the constructed sequence, and so
    does a missing rescale when its maximum moves to the second block."""
    q, k, v, table, cl = _subnormal_sequence()
    want, mag = ref.reference(np, q, k, v, table, cl), ref.magnitude(np, q, k, v, table, cl)
    ftz = np.abs(_model(q, k, v, table, cl, round_p=_f16_ftz) - want)
    assert (ftz > 2 * mag).any(), float((ftz / mag).max())
    k2, v2 = k.copy(), v.copy()
    k2[1, 3, 0, 0], k2[0, 0, 0, 0] = k[0, 0, 0, 0], k[1, 3, 0, 0]   # token 19 (block 1) dominates, v = 1
    v2[1, 3, 0] = 1
    want2, mag2 = ref.reference(np, q, k2, v2, table, cl), ref.magnitude(np, q, k2, v2, table, cl)
    assert (np.abs(_model(q, k2, v2, table, cl) - want2) <= mag2).all()
    assert (np.abs(_model(q, k2, v2, table, cl, rescale=False) - want2) > mag2).any()


def test_bfloat16_needs_no_subnormal_term(ref):
    """The same sequence in bfloat16 (float32's exponent range: every weight stays normal, off by at
    most 2^-8 relatively) passes the bound, which has no absolute term for bfloat16."""
    q, k, v, table, cl = _subnormal_sequence("bfloat16")
    want, mag = ref.reference(np, q, k, v, table, cl), ref.magnitude(np, q, k, v, table, cl)
    err = np.abs(_model(q, k, v, table, cl, round_p=_to_bf16) - want)
    assert (err <= mag).all(), float((err / mag).max())


# -- the split plan -------------------------------------------------------------------------------
SHAPES = [(64, 8, 512), (1, 8, 8192), (64, 8, 8192), (16, 8, 8192), (1, 1, 1), (3, 2, 5), (64, 16, 8192),
          (7, 3, 33), (1, 16, 8192), (2, 1, 31)]


@pytest.mark.parametrize("B, HKV, MB", SHAPES)
@pytest.mark.parametrize("sms", [132, 7])
def test_split_plan_covers_every_block_once(sol, B, HKV, MB, sms):
    """Replays the kernel's indexing: CTA (s, h, b) takes blocks [s P, min((s + 1) P, nb)), warp w
    of it blocks blk0 + w + 4 k; the combine merges ceil(nb / P) splits. For lengths 1, 16 MB and
    random ones, every block of every sequence is taken by exactly one (split, warp)."""
    plan = sol._plan(B, HKV, MB, sms)
    P, S = plan["P"], plan["S"]
    assert plan["grid"] == (S, HKV, B) and P >= sol._P_MIN and S * P >= MB and (S - 1) * P < MB
    assert B * HKV * S <= max(sol._CTAS_PER_SM * sms, B * HKV) + B * HKV      # the cap, up to rounding
    rng = np.random.default_rng(B * 1000 + MB)
    for L in [1, 16, 17, 16 * MB, *rng.integers(1, 16 * MB + 1, 4)]:
        nb = -(-int(L) // 16)
        seen = np.zeros(nb, np.int64)
        active = 0
        for s in range(S):
            blk0 = s * P
            if blk0 >= nb:
                continue
            active += 1
            cnt = min(blk0 + P, nb) - blk0
            for w in range(4):
                nk = (cnt - w + 3) // 4 if cnt > w else 0
                for kk in range(nk):
                    seen[blk0 + w + kk * 4] += 1
            assert cnt >= 1                           # warp 0 has a block: the merge's max is finite
        assert (seen == 1).all()
        assert active == -(-nb // P) and active <= S      # splits_b in the kernels; partials fit (B, HQ, S)


def test_split_plan_targets():
    """The two benchmark shapes of the issue: batch 64 at 8192 tokens splits into 16 per sequence,
    batch 1 at 131072 into one wave: 33 splits of 249 blocks for 8 KV heads, 264 CTAs, 2 per SM
    of an H200 (32-block splits would make 2048 CTAs, 15 per SM: eight waves)."""
    sol = _load("ex16_solution_t", SOLUTION / "solution.py")
    assert sol._plan(64, 8, 512, 132) == {"P": 32, "S": 16, "grid": (16, 8, 64)}
    assert sol._plan(1, 8, 8192, 132) == {"P": 249, "S": 33, "grid": (33, 8, 1)}
    assert sol._plan(1, 8, 8192, 7) == {"P": 8192, "S": 1, "grid": (1, 8, 1)}     # 14 resident CTAs: one split
    assert sol._plan(1, 1, 512, 132) == {"P": 32, "S": 16, "grid": (16, 1, 1)}    # fits in one wave as it is
    # the uneven benchmark: the 64-CTAs-per-SM cap makes the splits longer (125 blocks, 2000 tokens)
    assert sol._plan(16, 8, 8192, 132) == {"P": 125, "S": 66, "grid": (66, 8, 16)}


# -- the fixtures (tests/variants.py): each changes the reference in the one place it says ---------
def test_the_no_split_fixture_never_splits(tmp_path):
    from tests.variants import build
    nosplit = _load("ex16_fixture_nosplit", build("ex16_paged_decode_attention_no_split", tmp_path / "f") / "solution.py")
    assert nosplit._plan(1, 8, 8192, 132)["S"] == 1 and nosplit._plan(64, 8, 512, 132)["S"] == 1


def test_the_reads_past_context_fixture_compiles(tmp_path):
    from tests.variants import build
    folder = build("ex16_paged_decode_attention_reads_past_context", tmp_path / "f")
    log, _ptx = _nvrtc_build((folder / "kernel.cu").resolve())
    assert "error" not in log.lower()
