"""ex15_gemm_fp8_blockscaled's reference solution, checked without a GPU: its kernel compiles with
NVRTC for sm_90a as grading compiles (no spills, registers within the setmaxnreg budget, shared
memory within 227 KB, QGMMA (FP8 wgmma) and UTMALDG in the SASS), the stub compiles, the e4m3
decoder and encoder are exact, the oracle is the per-k-block sum it claims to be, the spec loads
(FP8 inputs, shape expressions, the fp8 ceiling), grade --compile-only's report of the solution and
the stub, and solve's index math (the grouped persistent order, each thread's rows, columns and
scale indices) covers every element once and reproduces the oracle, and the spec's tolerance
accepts fp32 accumulation per k-block while it rejects e5m2 precision and per-tensor scales (the
grader's comparison on results computed in NumPy). Nothing here runs a kernel (the GPU checks:
tests/test_gpu.py grades it; benchmarks/verify_ex15.py)."""
from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT
from tests.draft_kernels import nvrtc_compile, sass_functions

EXERCISE = ROOT / "exercises" / "ex15_gemm_fp8_blockscaled"
SOLUTION = ROOT / "solutions" / "ex15_gemm_fp8_blockscaled"
STUB = ROOT / "student_template" / "ex15_gemm_fp8_blockscaled"
KERNEL = SOLUTION / "kernel.cu"
TEMPLATE = STUB / "kernel.cu"
ARCH = "sm_90a"
GEMM = "gemm_fp8_blockscaled"
THREADS = 384
# 65536 registers per SM over 384 threads, in the allocation unit of 8: what a 384-thread CTA may
# start with; setmaxnreg then moves them (40 producer, 232 consumer: 40 * 128 + 232 * 256 = 64512).
REG_BUDGET = (65536 // THREADS) // 8 * 8          # 168
SMEM_LIMIT = 227 * 1024                            # dynamic shared memory per block on sm_90


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)   # no GPU needed: solution.py compiles kernel.cu on the first solve
    return mod


def _solution_module():
    return _module("ex15_solution", SOLUTION / "solution.py")


def _reference_module():
    return _module("ex15_reference", EXERCISE / "reference.py")


def _defines(text: str) -> dict[str, int]:
    return {m[1]: int(m[2]) for m in re.finditer(r"^#define (H_\w+) (\d+)\b", text, re.M)}


@pytest.fixture(scope="module")
def nvrtc_build():
    """(ptxas log, cubin, PTX) of the solution's kernel.cu compiled by NVRTC for sm_90a, grading's options."""
    return nvrtc_compile(KERNEL, ARCH)


# ---- the kernel: compiles, resources, instructions --------------------------------------------

def test_resources_within_budget(nvrtc_build):
    from grader.static import _parse_ptxas
    log, _cubin, _ptx = nvrtc_build
    k = {k.name: k for k in _parse_ptxas(log)}[GEMM]
    assert k.spill_store_bytes == 0 and k.spill_load_bytes == 0 and k.stack_bytes == 0, k
    assert k.registers <= REG_BUDGET, k
    assert k.shared_bytes == 0, k      # all of it dynamic, sized below
    assert "serializ" not in log.lower(), log   # ptxas: "wgmma ... serialized" (a fence or register move)
    assert not [ln for ln in log.splitlines() if "warning" in ln.lower()], log


def test_ptx_has_the_hopper_fp8_instructions(nvrtc_build):
    _log, _cubin, ptx = nvrtc_build
    for pattern in (r"wgmma\.mma_async\.sync\.aligned\.m64n128k32\.f32\.e4m3\.e4m3",
                    r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.mbarrier::complete_tx::bytes",
                    r"setmaxnreg\.dec\.sync\.aligned\.u32 40", r"setmaxnreg\.inc\.sync\.aligned\.u32 232",
                    r"mbarrier\.try_wait\.parity", r"mbarrier\.arrive\.expect_tx", r"wgmma\.wait_group\.sync\.aligned 0",
                    # retarget_maps: the template maps pointed at this call's arrays on the device
                    r"tensormap\.replace\.tile\.global_address\.shared::cta\.b1024\.b64",
                    r"tensormap\.cp_fenceproxy\.global\.shared::cta\.tensormap::generic\.release\.gpu\.sync\.aligned",
                    r"fence\.proxy\.tensormap::generic\.acquire\.gpu"):
        assert re.search(pattern, ptx), pattern
    spec = tomllib.loads((EXERCISE / "spec.toml").read_text())
    for pattern in spec["features"]["required_ptx"]:
        assert re.search(pattern, ptx), pattern


def test_template_compiles_for_sm90a():
    log, _cubin, _ptx = nvrtc_compile(TEMPLATE, ARCH)
    assert not [ln for ln in log.splitlines() if "warning" in ln.lower()], log


def test_the_no_promotion_fixture_compiles_and_keeps_one_accumulator(tmp_path):
    """tests/variants.py's shortcut (the GPU test fails it on correctness): it compiles as grading
    compiles, and the per-k-block accumulator set is gone."""
    from tests.variants import build
    folder = build("ex15_gemm_fp8_blockscaled_no_promotion", tmp_path / "f")
    log, _cubin, _ptx = nvrtc_compile(folder / "kernel.cu", ARCH)
    assert "error" not in log.lower(), log
    text = (folder / "kernel.cu").read_text()
    assert "blk[" not in text and "kb != 0 || kk != 0" in text


def test_shared_memory_and_constants_agree():
    """solution.py's tile constants and dynamic shared memory are kernel.cu's, within 227 KB; a stage
    row is one 128-byte swizzle row and one scale block; the two accumulator sets fit the consumers'
    232 registers with room for the addressing."""
    d = _defines(KERNEL.read_text())
    mod = _solution_module()
    assert (mod._BM, mod._BN, mod._BK, mod._STAGES, mod._THREADS) == (
        d["H_BM"], d["H_BN"], d["H_BK"], d["H_STAGES"], d["H_THREADS"])
    stage = (d["H_BM"] + d["H_BN"]) * d["H_BK"]          # e4m3: one byte an element
    assert d["H_BAR_BYTES"] >= 2 * d["H_STAGES"] * 8 and d["H_BAR_BYTES"] % 128 == 0   # the maps after it: 128-aligned
    assert d["H_MAP_BYTES"] == 2 * mod._MAP_BYTES == 256
    assert mod._SMEM == 1024 + d["H_STAGES"] * stage + d["H_BAR_BYTES"] + d["H_MAP_BYTES"] == 198016
    assert mod._SMEM <= SMEM_LIMIT
    assert d["H_BK"] == 128 == mod._SCALE_BLOCK     # 128 e4m3 = 128 bytes: the swizzle row the descriptors assume
    assert d["H_BN"] == mod._SCALE_BLOCK            # one sb block per tile: the kernel reads sb row tn
    assert d["H_ACC"] == 64 * d["H_BN"] // 128 and 2 * d["H_ACC"] + 40 <= 232


def test_sass_has_qgmma_and_utmaldg(nvrtc_build, tmp_path):
    _log, cubin, _ptx = nvrtc_build
    funcs = sass_functions(cubin, tmp_path)
    body = funcs[GEMM]
    qgmma = re.findall(r"QGMMA\.64x128x32\.F32\.E4M3\.E4M3 [^;]*;", body)
    assert len(qgmma) == 4, qgmma                 # 4 k32 steps per k-block, unrolled
    assert ", RZ, !UPT" in qgmma[0]               # the first starts from zero (scale-d = 0): a fresh block sum
    assert len(re.findall(r"\bUTMALDG\.2D\b", body)) == 2    # the A box and the B box
    assert "USETMAXREG" in body
    assert not re.search(r"\b(LDL|STL)\b", body)            # no local memory
    assert len(re.findall(r"\bFFMA\b", body)) >= 64          # the promotion: 64 per k-block a thread


# ---- the oracle: e4m3 decoding, encoding, the per-k-block sum ---------------------------------

def test_e4m3_decoder_known_values():
    t = _reference_module().E4M3
    assert t.shape == (256,) and t.dtype == np.float64
    assert t[0x7E] == 448.0 and t[0xFE] == -448.0          # largest finite: S.1111.110 = 1.75 * 2^8
    assert t[0x08] == 2.0 ** -6                            # smallest normal
    assert t[0x01] == 2.0 ** -9 and t[0x81] == -(2.0 ** -9)   # smallest subnormal
    assert t[0x07] == 7 * 2.0 ** -9                        # largest subnormal
    assert t[0x38] == 1.0 and t[0x39] == 1.125 and t[0x40] == 2.0 and t[0xB8] == -1.0
    assert t[0x00] == 0.0 and t[0x80] == 0.0 and np.signbit(t[0x80])
    assert np.isnan(t[0x7F]) and np.isnan(t[0xFF])
    assert np.isnan(t).sum() == 2 and not np.isinf(t).any()   # no infinities: 0x78..0x7E are finite
    assert t[0x78] == 256.0
    pos = t[:0x7F]
    assert (np.diff(pos) > 0).all() and np.array_equal(t[0x80:0xFF], -pos)


def test_e4m3_decoder_against_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    want = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    got = _reference_module().E4M3
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got[~np.isnan(got)], want[~np.isnan(want)])


def test_e4m3_encoder_rounds_to_nearest_even_and_saturates():
    ref = _reference_module()
    codes = np.array([c for c in range(256) if c not in (0x7F, 0xFF)], dtype=np.uint8)
    assert np.array_equal(ref.encode_e4m3(np, ref.E4M3[codes]), codes)     # every finite value round-trips
    x = np.array([1.0625, 1.1875, 2.0 ** -10, 3 * 2.0 ** -10, 464.0, 1e9, -1e9, 449.0, np.nan, 1e-30, -0.0])
    want = [0x38, 0x3A, 0x00, 0x02, 0x7E, 0x7E, 0xFE, 0x7E, 0x7F, 0x00, 0x80]
    assert ref.encode_e4m3(np, x).tolist() == want
    rng = np.random.default_rng(1)
    v = rng.standard_normal(10000) * 50
    enc = ref.E4M3[ref.encode_e4m3(np, v)]
    pos = ref.E4M3[:0x7F]
    nearest = pos[np.abs(np.abs(v)[:, None] - pos[None, :]).argmin(axis=1)] * np.sign(v)
    assert np.array_equal(np.abs(enc - v), np.abs(nearest - v))              # nearest (ties aside)


def _random_inputs(rng, M, N, K):
    kb, nb = K // 128, -(-N // 128)
    a = rng.integers(0, 254, (M, K))
    b = rng.integers(0, 254, (N, K))
    a = np.where(a >= 0x7F, a + 1, a).astype(np.uint8)     # every finite code, subnormals included
    b = np.where(b >= 0x7F, b + 1, b).astype(np.uint8)
    sa = rng.uniform(0.001, 2, (M, kb)).astype(np.float32)
    sb = rng.uniform(0.001, 2, (nb, kb)).astype(np.float32)
    return a, sa, b, sb


@pytest.mark.parametrize("M, N, K", [(1, 1, 128), (3, 130, 256), (17, 257, 384), (5, 128, 1024)])
def test_oracle_is_the_per_k_block_sum(M, N, K):
    """reference() against the definition, term by term: a loop over k-blocks, NumPy dot products of
    decoded values, the block's two scales applied to its sum."""
    ref = _reference_module()
    rng = np.random.default_rng(M * N + K)
    a, sa, b, sb = _random_inputs(rng, M, N, K)
    dec = ref.E4M3
    want = np.zeros((M, N))
    mag = np.zeros((M, N))
    for kb in range(K // 128):
        ks = slice(128 * kb, 128 * (kb + 1))
        for n in range(N):
            blk = dec[a[:, ks]] @ dec[b[n, ks]]
            blk_abs = np.abs(dec[a[:, ks]]) @ np.abs(dec[b[n, ks]])
            s = sa[:, kb].astype(np.float64) * float(sb[n // 128, kb])
            want[:, n] += s * blk
            mag[:, n] += s * blk_abs
    got = ref.reference(np, a, sa, b, sb)
    assert got.dtype == np.float64 and got.shape == (M, N)
    assert np.allclose(got, want, rtol=1e-13, atol=1e-13 * mag.max())
    assert np.allclose(ref.magnitude(np, a, sa, b, sb), mag, rtol=1e-13, atol=0)
    # decoded float inputs (what a grader that decodes FP8 itself would pass) give the same
    assert np.array_equal(ref.reference(np, dec[a].astype(np.float32), sa, dec[b].astype(np.float32), sb), got)


# ---- the spec ------------------------------------------------------------------------------------

def test_spec_loads_with_fp8_inputs_scale_shapes_and_the_fp8_ceiling():
    """The spec loads, its edge cases satisfy the dims, the derived scale shapes come out as the
    kernel expects, and it pins sm_90a, the FP8 wgmma and the fp8 ceiling."""
    from grader.spec import load_spec
    spec = load_spec(EXERCISE / "spec.toml")
    assert spec.arch == "sm_90a" and any("e4m3" in p for p in spec.required_ptx) and spec.ceiling == "fp8"
    assert [t.dtype for t in spec.inputs] == ["float8_e4m3fn", "float32", "float8_e4m3fn", "float32"]
    for case in spec.edge_cases:
        assert spec.check_dims(dict(case.dims)) is None, case
    shapes = {t.name: t.concrete_shape({"M": 300, "N": 257, "K": 640}) for t in spec.inputs}
    assert shapes == {"a": (300, 640), "sa": (300, 5), "b": (257, 640), "sb": (3, 5)}


def test_static_report_of_the_solution_and_the_stub():
    """grade --compile-only's checks (sm_90a): the solution and the stub both compile and pass
    solve's signature, imports, kernel names and forbidden patterns; the required PTX (the e4m3
    wgmma) is in the solution's, not in the stub's."""
    from grader.spec import load_spec
    from grader.static import nvrtc_unavailable, static_report
    why = nvrtc_unavailable()
    if why:
        pytest.skip(f"NVRTC cannot be loaded here: {why}")
    spec = load_spec(EXERCISE / "spec.toml")
    rep = static_report(spec, SOLUTION, ARCH)
    assert rep.compiled and not rep.problems and not rep.warnings, (rep.problems, rep.warnings)
    stub = static_report(spec, STUB, ARCH)
    assert stub.compiled and not stub.problems, stub.problems
    assert any("wgmma" in w for w in stub.warnings), stub.warnings


# ---- host-side index math: the schedule and each thread's share ---------------------------------

SHAPES = [(1, 1, 128), (17, 17, 256), (127, 129, 128), (1000, 1, 384), (4099, 5, 128), (513, 1025, 2048),
          (8192, 8192, 8192), (4096, 7168, 2048), (64, 7168, 8192), (16384, 16384, 128), (2000, 300, 1280)]


@pytest.mark.parametrize("M, N, K", SHAPES)
@pytest.mark.parametrize("sms", [132, 7, 3])
def test_persistent_grouped_order_covers_every_tile_once(M, N, K, sms):
    """Replays the kernel's schedule: CTA b of the grid takes tiles b, b + grid, ... and maps each
    through the grouped order; every (tile row, tile column) comes up exactly once."""
    mod = _solution_module()
    p = mod._plan(M, N, K, sms)
    assert p["k_blocks"] * 128 == K
    tiles_m, tiles_n = p["tiles_m"], p["tiles_n"]
    assert (tiles_m - 1) * 128 < M <= tiles_m * 128 and (tiles_n - 1) * 128 < N <= tiles_n * 128
    assert 1 <= p["grid"] <= sms and p["grid"] <= tiles_m * tiles_n
    seen = np.zeros((tiles_m, tiles_n), dtype=np.int64)
    t = np.arange(tiles_m * tiles_n)
    for b in range(p["grid"]):
        for tile in t[b::p["grid"]]:
            tm, tn = mod._tile_coords(int(tile), tiles_m, tiles_n, p["group_m"])
            assert 0 <= tm < tiles_m and 0 <= tn < tiles_n
            seen[tm, tn] += 1
    assert (seen == 1).all()


def test_plan_refuses_k_not_a_multiple_of_128():
    with pytest.raises(ValueError, match="multiple of 128"):
        _solution_module()._plan(128, 128, 200, 132)


def _emulate_kernel(mod, a, sa, b, sb, sms):
    """kernel.cu's consumer arithmetic in NumPy float64, index by index as the kernel writes it: for
    each CTA's tiles, consumer c, warp, lane and k-block: rows row0 = tm*128 + 64c + 16 warp + lane/4
    and row0 + 8, their sa at min(row, M - 1), sb row tn, the fragment's columns
    tn*128 + 8j + 2(lane%4) + 0..1; stores guarded by M and N. Returns D and a count of writes."""
    ref = _reference_module()
    A, B = ref.E4M3[a], ref.E4M3[b]
    M, K = A.shape
    N = B.shape[0]
    p = mod._plan(M, N, K, sms)
    kbs, tiles_m, tiles_n = p["k_blocks"], p["tiles_m"], p["tiles_n"]
    D = np.full((M, N), np.nan)
    writes = np.zeros((M, N), dtype=np.int64)
    # zero-filled TMA boxes: A and B padded to whole tiles
    Ap = np.zeros((tiles_m * 128, K))
    Ap[:M] = A
    Bp = np.zeros((tiles_n * 128, K))
    Bp[:N] = B
    lane = np.arange(32)
    for blk in range(p["grid"]):
        for t in range(blk, tiles_m * tiles_n, p["grid"]):
            tm, tn = mod._tile_coords(t, tiles_m, tiles_n, p["group_m"])
            for c in range(2):
                for warp in range(4):
                    row0 = tm * 128 + c * 64 + warp * 16 + lane // 4        # (32,)
                    acc = np.zeros((32, 16, 4))                             # lane, j, d[4j + 0..3]
                    for kb in range(kbs):
                        ks = slice(128 * kb, 128 * (kb + 1))
                        a0 = sa[np.minimum(row0, M - 1), kb].astype(np.float64)
                        a1 = sa[np.minimum(row0 + 8, M - 1), kb].astype(np.float64)
                        bs = float(sb[tn, kb])
                        cols = tn * 128 + 8 * np.arange(16)[None, :] + 2 * (lane % 4)[:, None]   # (32, 16)
                        blk_sum = np.empty((32, 16, 4))
                        for i, (rows, dc) in enumerate(((row0, 0), (row0, 1), (row0 + 8, 0), (row0 + 8, 1))):
                            blk_sum[:, :, i] = np.einsum("lk,ljk->lj", Ap[rows, ks], Bp[cols + dc, ks])
                        acc[:, :, 0:2] += (a0 * bs)[:, None, None] * blk_sum[:, :, 0:2]
                        acc[:, :, 2:4] += (a1 * bs)[:, None, None] * blk_sum[:, :, 2:4]
                    for h in range(2):
                        rows = row0 + 8 * h
                        for j in range(16):
                            for e in range(2):
                                col = tn * 128 + 2 * (lane % 4) + 8 * j + e
                                ok = (rows < M) & (col < N)
                                D[rows[ok], col[ok]] = acc[ok, j, 2 * h + e]
                                np.add.at(writes, (rows[ok], col[ok]), 1)
    return D, writes


@pytest.mark.parametrize("M, N, K, sms", [(1, 1, 128, 132), (17, 130, 256, 132), (200, 300, 384, 3),
                                          (129, 127, 128, 2)])
def test_kernel_index_math_reproduces_the_oracle(M, N, K, sms):
    """Every element of D written exactly once, with the value the oracle gives: the fragment layout,
    the scale indices (sa's row clamp, sb's row = the tile column) and the tails agree."""
    mod = _solution_module()
    ref = _reference_module()
    a, sa, b, sb = _random_inputs(np.random.default_rng(K + M), M, N, K)
    D, writes = _emulate_kernel(mod, a, sa, b, sb, sms)
    assert (writes == 1).all()
    want = ref.reference(np, a, sa, b, sb)
    mag = ref.magnitude(np, a, sa, b, sb)
    assert np.allclose(D, want, rtol=1e-12, atol=1e-12 * mag.max())


def test_tensor_maps_come_from_the_grader_with_the_kernels_boxes(monkeypatch):
    """solve builds its descriptors with grader.kernel.tensor_map (box in the array's order: 128 rows
    by 128 e4m3 bytes, 128-byte swizzle), once per (pointer, shape, dtype)."""
    mod = _solution_module()
    calls = []

    class Fake:
        def __init__(self, shape, ptr):
            self.shape, self.dtype = shape, np.dtype(np.uint8)
            self.data = type("P", (), {"ptr": ptr})()

    monkeypatch.setattr(mod, "tensor_map", lambda arr, box, **kw: calls.append((arr.shape, tuple(box), kw)) or len(calls))
    monkeypatch.setattr(mod.cp.cuda.runtime, "getDevice", lambda: 0)
    a = Fake((1000, 1024), 0x7F0000001000)
    assert mod._tensor_map(a, mod._BM, mod._BK) == mod._tensor_map(a, mod._BM, mod._BK) == 1
    mod._tensor_map(Fake((512, 1024), 0x7F0000100000), mod._BN, mod._BK)
    assert calls == [((1000, 1024), (128, 128), {"swizzle": 128, "l2_promotion": 128}),
                     ((512, 1024), (128, 128), {"swizzle": 128, "l2_promotion": 128})]
    # a template (the kernel replaces its address): one per shape and box, whatever the pointer
    first = mod._tensor_map(Fake((64, 8192), 0x7F0000200000), mod._BM, mod._BK, True)
    assert mod._tensor_map(Fake((64, 8192), 0x7F0000300000), mod._BM, mod._BK, True) == first
    assert len(calls) == 3


def test_uint8_is_a_tma_data_type():
    """The FP8 operands travel to the TMA as uint8 (grader.tma copies bytes); the intended dtype name too."""
    from grader.tma import DATA_TYPES
    assert DATA_TYPES["uint8"] == DATA_TYPES["float8_e4m3fn"] == 0


# ---- the tolerance: the shortcuts it must reject, the honest kernel it must accept --------------
# On the CPU, through the grader's own comparison (grader.compare with the spec's bfloat16 bounds):
# results computed in float64 from the case's inputs as a kernel would get them wrong, rounded to
# bfloat16 as the kernel's output is.

TOL_SHAPE = (64, 130, 1024)      # M, N, K: two column blocks of sb, eight k-blocks


def _round_to_e5m2(x):
    """x (float64, within e4m3's range) rounded to e5m2's precision: 3 significant bits, to nearest
    even. e5m2's exponent range (2^-16 .. 57344) holds every e4m3 value, e4m3's subnormals
    included, so only the significand rounds."""
    m, e = np.frexp(x)                                   # x = m 2^e, 0.5 <= |m| < 1
    return np.ldexp(np.round(m * 8), e - 3)              # np.round: half to even


def test_e5m2_rounding_matches_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    t = _reference_module().E4M3
    vals = t[~np.isnan(t)]
    assert np.array_equal(_round_to_e5m2(vals), vals.astype(ml_dtypes.float8_e5m2).astype(np.float64))
    assert (_round_to_e5m2(vals) != vals).sum() > 100    # about half of the codes move


def _tolerance_case(dist: int, seed: int = 5):
    """(spec, case, inputs, oracle output, magnitude) at TOL_SHAPE, a and b drawn from
    distribution ``dist`` of the spec, the scales from its second (0.5 .. 2)."""
    from grader.cases import Case, make_inputs
    from grader.instance import load_oracle, run_magnitude, run_oracle
    from tests.conftest import spec_of
    spec = spec_of("ex15_gemm_fp8_blockscaled")
    M, N, K = TOL_SHAPE
    case = Case((("M", M), ("N", N), ("K", K)), (("a", dist), ("sa", 1), ("b", dist), ("sb", 1)), seed)
    values = make_inputs(spec, case, np)
    oracle = load_oracle(spec)
    ref = run_oracle(oracle, spec, values, np, case.type_dict)[0]
    mag = run_magnitude(oracle, spec, values, np, case.dim_dict, case.type_dict)[0]
    return spec, case, values, ref, mag


def _mismatch(spec, case, values, ref, mag, d):  # type: ignore[no-untyped-def]
    """The grader's verdict on the result ``d`` (float), rounded to bfloat16 as the kernel writes it."""
    from grader.compare import compare, resolve_atol, resolve_normwise, resolve_rtol
    from grader.dtypes import encode
    tol = spec.tolerances["bfloat16"]
    dims = case.dim_dict
    return compare("d", encode(np, d, "bfloat16"), ref, tol, resolve_atol(tol, "bfloat16", dims, values, np, mag),
                   False, np, ("M", "N"), resolve_normwise(tol, "bfloat16", dims), resolve_rtol(tol, "bfloat16", dims),
                   dtype="bfloat16")


def _blockwise_fp32(a, sa, b, sb):
    """The reference kernel's arithmetic in NumPy: each 128-wide k-block's products summed in fp32,
    promoted with fma-like fp32 updates acc += (sa sb) blk."""
    dec = _reference_module().E4M3.astype(np.float32)
    A, B = dec[a], dec[b]
    rows = np.arange(B.shape[0]) // 128
    acc = np.zeros((A.shape[0], B.shape[0]), np.float32)
    for kb in range(A.shape[1] // 128):
        ks = slice(128 * kb, 128 * (kb + 1))
        blk = A[:, ks] @ B[:, ks].T
        acc += (sa[:, kb, None] * sb[rows, kb][None, :]) * blk
    return acc


@pytest.mark.parametrize("dist", [0, 1, 2])             # normal(0, 1), uniform(-448, 448), uniform(0, 1)
def test_the_tolerance_accepts_fp32_accumulation_per_k_block(dist):
    spec, case, values, ref, mag = _tolerance_case(dist)
    got = _blockwise_fp32(values["a"], values["sa"], values["b"], values["sb"])
    assert _mismatch(spec, case, values, ref, mag, got) is None


@pytest.mark.parametrize("dist", [0, 1])               # with cancellation; uniform(0, 1) averages it out
def test_the_tolerance_rejects_e5m2_precision(dist):
    """A kernel that computes with e5m2's 3 significant bits instead of e4m3's 4 (an e5m2 wgmma on
    re-rounded inputs): every other product carries up to 2^-4 of relative error, far past the
    norm-wise bound; even computed exactly in float64 from the rounded inputs it fails."""
    spec, case, values, ref, mag = _tolerance_case(dist)
    dec = _reference_module().E4M3
    a5 = _round_to_e5m2(dec[values["a"]])
    b5 = _round_to_e5m2(dec[values["b"]])
    got = _reference_module().reference(np, a5, values["sa"], b5, values["sb"])
    mm = _mismatch(spec, case, values, ref, mag, got)
    assert mm is not None and mm.normwise_failed, mm
    assert mm.normwise_err > 3 * mm.normwise_bound


@pytest.mark.parametrize("dist", [0, 1, 2])
def test_the_tolerance_rejects_per_tensor_scales(dist):
    """A kernel that applies one scale per tensor (the mean of each scale array) instead of one per
    block: the scales differ between blocks by up to 4x, so the result is off by a factor."""
    spec, case, values, ref, mag = _tolerance_case(dist)
    dec = _reference_module().E4M3
    got = (dec[values["a"]] @ dec[values["b"]].T) * float(values["sa"].mean()) * float(values["sb"].mean())
    mm = _mismatch(spec, case, values, ref, mag, got)
    assert mm is not None and mm.normwise_failed, mm
