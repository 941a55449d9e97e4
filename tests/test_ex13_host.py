"""ex13_gemm_hopper's reference solution, checked without a GPU: its kernel compiles with NVRTC for
sm_90a as grading compiles (no spills, registers within the setmaxnreg budget, shared memory within
227 KB, HGMMA and UTMALDG in the SASS), it passes grade --compile-only's static checks, and solve's
index math (tile counts, the grouped persistent order) covers every tile once. Nothing here runs a
kernel (the GPU checks: tests/test_gpu.py grades it; benchmarks/verify_ex13.py)."""
from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest

from tests.conftest import ROOT
from tests.draft_kernels import nvrtc_compile, sass_functions

EXERCISE = ROOT / "exercises" / "ex13_gemm_hopper"
SOLUTION = ROOT / "solutions" / "ex13_gemm_hopper"
KERNEL = SOLUTION / "kernel.cu"
ARCH = "sm_90a"
GEMMS = ("gemm_hopper_f16", "gemm_hopper_bf16")
THREADS = 384
# 65536 registers per SM over 384 threads, in the allocation unit of 8: what a 384-thread CTA may
# start with; setmaxnreg then moves them (40 producer, 232 consumer: 40 * 128 + 232 * 256 = 64512).
REG_BUDGET = (65536 // THREADS) // 8 * 8          # 168
SMEM_LIMIT = 227 * 1024                            # dynamic shared memory per block on sm_90


def _solution_module():
    spec = importlib.util.spec_from_file_location("ex13_solution", SOLUTION / "solution.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)   # no GPU needed: the module compiles kernel.cu on the first solve
    return mod


def _defines(text: str) -> dict[str, int]:
    return {m[1]: int(m[2]) for m in re.finditer(r"^#define (H_\w+) (\d+)\b", text, re.M)}


@pytest.fixture(scope="module")
def nvrtc_build():
    """(ptxas log, cubin, PTX) of kernel.cu compiled by NVRTC for sm_90a with the grading options."""
    return nvrtc_compile(KERNEL, ARCH)


def test_resources_within_budget(nvrtc_build):
    from grader.static import _parse_ptxas
    log, _cubin, _ptx = nvrtc_build
    kernels = {k.name: k for k in _parse_ptxas(log)}
    for name in GEMMS:
        k = kernels[name]
        assert k.spill_store_bytes == 0 and k.spill_load_bytes == 0 and k.stack_bytes == 0, k
        assert k.registers <= REG_BUDGET, k
        assert k.shared_bytes == 0, k      # all of it dynamic, sized below
    assert "wgmma" not in log.lower() or "serializ" not in log.lower(), log   # ptxas: "wgmma ... serialized"
    assert not [ln for ln in log.splitlines() if "warning" in ln.lower()], log


def test_ptx_has_the_hopper_instructions(nvrtc_build):
    _log, _cubin, ptx = nvrtc_build
    for pattern in (r"wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.f16\.f16",
                    r"wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.bf16\.bf16",
                    r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.mbarrier::complete_tx::bytes",
                    r"setmaxnreg\.dec\.sync\.aligned\.u32 40", r"setmaxnreg\.inc\.sync\.aligned\.u32 232",
                    r"mbarrier\.try_wait\.parity", r"mbarrier\.arrive\.expect_tx"):
        assert re.search(pattern, ptx), pattern


def test_shared_memory_and_constants_agree():
    """solution.py's tile constants and dynamic shared memory are kernel.cu's, within 227 KB."""
    d = _defines(KERNEL.read_text())
    mod = _solution_module()
    assert (mod._BM, mod._BN, mod._BK, mod._STAGES, mod._THREADS) == (
        d["H_BM"], d["H_BN"], d["H_BK"], d["H_STAGES"], d["H_THREADS"])
    stage = (d["H_BM"] + d["H_BN"]) * d["H_BK"] * 2
    assert mod._SMEM == 1024 + d["H_STAGES"] * stage + 2 * d["H_STAGES"] * 8
    assert mod._SMEM <= SMEM_LIMIT
    assert d["H_BK"] * 2 == 128       # one K tile row = one 128-byte swizzle row (the descriptors assume it)


def test_sass_has_hgmma_and_utmaldg(nvrtc_build, tmp_path):
    _log, cubin, _ptx = nvrtc_build
    funcs = sass_functions(cubin, tmp_path)
    assert set(GEMMS) <= set(funcs), list(funcs)
    for name in GEMMS:
        body = funcs[name]
        hgmma = re.findall(r"HGMMA\.64x256x16\.F32(\.BF16)?\b", body)
        assert len(hgmma) == 4, (name, hgmma)                        # 4 k16 steps per K tile, unrolled
        assert all(bool(h) == name.endswith("bf16") for h in hgmma), (name, hgmma)
        assert len(re.findall(r"\bUTMALDG\.2D\b", body)) == 2, name    # the A box and the B box
        assert "USETMAXREG" in body, name
        assert not re.search(r"\b(LDL|STL)\b", body), name            # no local memory


def test_spec_requires_wgmma_and_sm_90a():
    from grader.spec import load_spec
    spec = load_spec(EXERCISE / "spec.toml")
    assert spec.required_ptx == (r"wgmma\.mma_async",) and spec.arch == "sm_90a"


def test_static_report_of_the_solution_and_the_stub():
    """grade --compile-only's checks (sm_90a): the solution and the student template both compile
    and pass solve's signature, imports, kernel names and forbidden patterns; the required PTX
    (wgmma.mma_async) is in the solution's, not in the stub's."""
    from grader.spec import load_spec
    from grader.static import nvrtc_unavailable, static_report
    why = nvrtc_unavailable()
    if why:
        pytest.skip(f"NVRTC cannot be loaded here: {why}")
    spec = load_spec(EXERCISE / "spec.toml")
    rep = static_report(spec, SOLUTION, ARCH)
    assert rep.compiled and not rep.problems and not rep.warnings, (rep.problems, rep.warnings)
    stub = static_report(spec, ROOT / "student_template" / "ex13_gemm_hopper", ARCH)
    assert stub.compiled, stub.problems
    assert not stub.problems and any("wgmma" in w for w in stub.warnings), (stub.problems, stub.warnings)


def test_the_wgmma_cp_async_fixture_compiles_with_wgmma_and_without_the_tma(tmp_path):
    """tests/variants.py's middle rung (graded on the GPU by tests/test_gpu.py): it compiles as
    grading compiles (sm_90a), keeps the reference's wgmma (so its speed is scored), loads with
    cp.async instead of cp.async.bulk.tensor, and fences the copies into the async proxy."""
    from grader.spec import load_spec
    from grader.static import nvrtc_unavailable, static_report
    from tests.variants import build
    folder = build("ex13_gemm_hopper_wgmma_cp_async", tmp_path / "f")
    _log, _cubin, ptx = nvrtc_compile(folder / "kernel.cu", ARCH)
    assert "wgmma.mma_async" in ptx and "cp.async.cg.shared.global" in ptx
    assert "cp.async.bulk.tensor" not in ptx and "fence.proxy.async" in ptx
    why = nvrtc_unavailable()
    if why:
        pytest.skip(f"NVRTC cannot be loaded here: {why}")
    rep = static_report(load_spec(EXERCISE / "spec.toml"), folder, ARCH)
    assert rep.compiled and not rep.problems and not rep.warnings, (rep.problems, rep.warnings)


def test_reference_is_a_times_b_transposed():
    spec = importlib.util.spec_from_file_location("ex13_reference", EXERCISE / "reference.py")
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    rng = np.random.default_rng(0)
    a, b = rng.integers(-3, 4, (5, 7)).astype(np.float32), rng.integers(-3, 4, (6, 7)).astype(np.float32)
    want = np.array([[sum(float(a[i, k]) * float(b[j, k]) for k in range(7)) for j in range(6)] for i in range(5)])
    assert np.array_equal(ref.reference(np, a, b), want)
    assert np.array_equal(ref.magnitude(np, a, b), np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64).T)


SHAPES = [(1, 1, 1), (17, 17, 17), (127, 129, 1), (1000, 1, 129), (4099, 5, 3), (513, 1025, 2047),
          (8192, 8192, 8192), (8205, 2949, 5921), (16, 8192, 8192), (16384, 16384, 64), (2000, 300, 8)]


@pytest.mark.parametrize("M, N, K", SHAPES)
@pytest.mark.parametrize("sms", [132, 7])
def test_persistent_grouped_order_covers_every_tile_once(M, N, K, sms):
    """Replays the kernel's schedule: CTA b of the grid takes tiles b, b + grid, ... and maps each
    through the grouped order; every (tile row, tile column) comes up exactly once."""
    mod = _solution_module()
    p = mod._plan(M, N, K, sms)
    assert p["kp"] % 8 == 0 and K <= p["kp"] < K + 8
    assert p["k_tiles"] == -(-p["kp"] // 64) and p["k_tiles"] >= 1
    tiles_m, tiles_n = p["tiles_m"], p["tiles_n"]
    assert (tiles_m - 1) * 128 < M <= tiles_m * 128 and (tiles_n - 1) * 256 < N <= tiles_n * 256
    assert 1 <= p["grid"] <= sms and p["grid"] <= tiles_m * tiles_n
    seen = np.zeros((tiles_m, tiles_n), dtype=np.int64)
    t = np.arange(tiles_m * tiles_n)
    for b in range(p["grid"]):
        for tile in t[b::p["grid"]]:
            tm, tn = mod._tile_coords(int(tile), tiles_m, tiles_n, p["group_m"])
            assert 0 <= tm < tiles_m and 0 <= tn < tiles_n
            seen[tm, tn] += 1
    assert (seen == 1).all()


def test_grouped_order_walks_group_columns():
    """Within a group of group_m tile rows the order goes down a column first (L2 reuse of B)."""
    mod = _solution_module()
    order = [mod._tile_coords(t, 5, 3, 2) for t in range(15)]
    assert order[:6] == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
    assert order[12:] == [(4, 0), (4, 1), (4, 2)]       # the last, partial group: one row


def test_tensor_maps_come_from_the_grader_with_the_kernels_boxes(monkeypatch):
    """solve builds its descriptors with grader.kernel.tensor_map (box in the array's order: a tile
    of _BM or _BN rows by _BK columns, 128-byte swizzle), once per (pointer, shape, dtype)."""
    mod = _solution_module()
    calls = []

    class Fake:
        def __init__(self, shape, ptr):
            self.shape, self.dtype = shape, np.dtype(np.float16)
            self.data = type("P", (), {"ptr": ptr})()

    monkeypatch.setattr(mod, "tensor_map", lambda arr, box, **kw: calls.append((arr.shape, tuple(box), kw)) or len(calls))
    monkeypatch.setattr(mod.cp.cuda.runtime, "getDevice", lambda: 0)
    a = Fake((1000, 136), 0x7F0000001000)
    assert mod._tensor_map(a, "f16", mod._BM, mod._BK) == mod._tensor_map(a, "f16", mod._BM, mod._BK) == 1
    mod._tensor_map(Fake((512, 136), 0x7F0000100000), "f16", mod._BN, mod._BK)
    assert calls == [((1000, 136), (128, 64), {"swizzle": 128, "l2_promotion": 256}),
                     ((512, 136), (256, 64), {"swizzle": 128, "l2_promotion": 256})]
