"""Hopper on the GPU (marked ``gpu``; compute capability 9.0 only): an sm_90a kernel compiled through
the grader's own path (grader.kernel.configure + load) loads and runs, and a TMA tile copy with a map
from grader.kernel.tensor_map reads the right elements, zeros outside the tensor, and the 128-byte
swizzle pattern. Outcomes do not depend on timing (benchmarks/gpu_suite.py: the shared phase).

The PTX follows the PTX ISA (8.0 and later, target sm_90), by instruction name:
"Data Movement and Conversion Instructions: cp.async.bulk.tensor" (tile mode, 2D, global to
shared::cluster, completion through mbarrier::complete_tx::bytes, the tensor map addressed
generically as a __grid_constant__ kernel parameter), "Parallel Synchronization and Communication
Instructions: mbarrier" (mbarrier.init, mbarrier.arrive.expect_tx, mbarrier.try_wait.parity) and
"Memory Consistency: fence" (fence.mbarrier_init.release.cluster, fence.proxy.async.shared::cta); the
same sequence as the CUDA C++ Programming Guide's "Using TMA to transfer multi-dimensional arrays".
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import grader.kernel as gk

pytestmark = pytest.mark.gpu

ROWS, COLS = 100, 72          # the tensor: float32, rows of 288 bytes (a multiple of 16, as TMA needs)

TMA_KERNEL = r'''
// A CUtensorMap as the driver encodes it: 128 opaque bytes, 64-byte aligned in the parameter space.
struct alignas(64) TmaDescriptor { unsigned long long opaque[16]; };

// status[0]: the shared tile's address modulo 1024; status[1]: 1 when the copy never completed.
extern "C" __global__ void tma_load_tile(const __grid_constant__ TmaDescriptor tmap, float* out,
                                         int col0, int row0, unsigned int* status) {
    __shared__ alignas(1024) float tile[BOX_ROWS * BOX_COLS];
    __shared__ alignas(8) unsigned long long bar;
    const unsigned int bar_addr = static_cast<unsigned int>(__cvta_generic_to_shared(&bar));
    const unsigned int tile_addr = static_cast<unsigned int>(__cvta_generic_to_shared(tile));
    if (threadIdx.x == 0) {
        status[0] = tile_addr % 1024u;
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_addr) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        // one arrival, and the bytes the copy will deliver: the whole box, out-of-bounds fill included
        asm volatile("{\n\t.reg .b64 state;\n\t"
                     "mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n\t}"
                     :: "r"(bar_addr), "r"((unsigned int)(BOX_ROWS * BOX_COLS * sizeof(float))) : "memory");
        // coordinates innermost first: {column, row}, in elements
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(tile_addr), "l"(reinterpret_cast<unsigned long long>(&tmap)), "r"(col0), "r"(row0),
                        "r"(bar_addr) : "memory");
    }
    unsigned int done = 0;
    const long long start = clock64();
    while (!done) {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(bar_addr), "r"(0u) : "memory");
        if (!done && clock64() - start > 4000000000LL) {   // about 2 s: never hang the test
            if (threadIdx.x == 0) status[1] = 1u;
            return;
        }
    }
    for (int i = threadIdx.x; i < BOX_ROWS * BOX_COLS; i += blockDim.x) out[i] = tile[i];
}
'''

PLAIN_KERNEL = r'''
extern "C" __global__ void scale_add(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}
'''


@pytest.fixture(scope="module")
def cupy_on_hopper():
    import cupy
    cc = int(cupy.cuda.Device().compute_capability)
    if cc != 90:
        pytest.skip(f"sm_90a code runs on compute capability 9.0 only; this GPU is {cc // 10}.{cc % 10}")
    return cupy


def _load_sm90a(tmp_path: Path, source: str, name: str, *defines: str):
    """``source`` compiled and loaded as a submission's kernel.cu is: grader.kernel.load, with the
    exercise's options and [features] arch = "sm_90a" set through configure (as the worker does)."""
    path = tmp_path / name
    path.write_text(source)
    gk.configure(("-std=c++17", *defines), "sm_90a")
    try:
        module = gk.load(path)
    finally:
        gk.configure(gk.DEFAULT_OPTIONS)
    ptx = gk.ptx_of_module(module) or ""
    assert ".target sm_90a" in ptx, f"grader.kernel.load did not compile {name} for sm_90a: {ptx[:300]!r}"
    return module


def test_an_sm_90a_kernel_loads_and_runs(cupy_on_hopper, tmp_path: Path) -> None:
    cupy = cupy_on_hopper
    kernel = _load_sm90a(tmp_path, PLAIN_KERNEL, "plain.cu").get_function("scale_add")
    n = 1000
    x = cupy.arange(n, dtype=cupy.float32)
    y = cupy.full(n, cupy.nan, dtype=cupy.float32)
    kernel(((n + 127) // 128,), (128,), (x, y, np.int32(n)))
    cupy.cuda.runtime.deviceSynchronize()
    got, want = cupy.asnumpy(y), 2 * np.arange(n, dtype=np.float32) + 1
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (f"the sm_90a cubin ran but wrote {bad.size} wrong elements of {n} (first at {bad[0]}: "
                           f"{got[bad[0]]} instead of {want[bad[0]]})")


def _tensor(cupy):
    host = (np.arange(ROWS * COLS, dtype=np.float32) + 1).reshape(ROWS, COLS)   # no element is 0
    return host, cupy.asarray(host)


def _run_tile(cupy, module, tmap, box, col0: int, row0: int) -> tuple[np.ndarray, np.ndarray]:
    out = cupy.full(box[0] * box[1], cupy.nan, dtype=cupy.float32)
    status = cupy.zeros(2, dtype=cupy.uint32)
    try:
        module.get_function("tma_load_tile")((1,), (128,), (tmap, out, np.int32(col0), np.int32(row0), status))
        cupy.cuda.runtime.deviceSynchronize()
    except Exception as exc:  # noqa: BLE001 - say what the launch was
        raise AssertionError(f"the TMA kernel failed at box {box} from (row {row0}, column {col0}): "
                             f"{type(exc).__name__}: {exc} (a rejected tensor map or a faulting "
                             f"cp.async.bulk.tensor shows as an illegal instruction or address)") from exc
    return cupy.asnumpy(out), cupy.asnumpy(status)


def _expected_box(host: np.ndarray, box, col0: int, row0: int) -> np.ndarray:
    """The box at (row0, col0) with zeros where it lies outside the tensor."""
    want = np.zeros(box, dtype=np.float32)
    for r in range(box[0]):
        for c in range(box[1]):
            gr, gc = row0 + r, col0 + c
            if 0 <= gr < ROWS and 0 <= gc < COLS:
                want[r, c] = host[gr, gc]
    return want


def _describe(got: np.ndarray, want: np.ndarray) -> str:
    bad = np.argwhere(got != want)
    r, c = bad[0]
    unwritten = int(np.isnan(got).sum())
    inside = (want != 0)
    return (f"{len(bad)} of {want.size} elements wrong; first at box[{r}, {c}]: {got[r, c]} instead of {want[r, c]}; "
            f"{unwritten} never written (NaN); in-bounds elements wrong: {int((got != want)[inside].sum())}, "
            f"out-of-bounds elements not zero: {int((got != want)[~inside].sum())}; wrong rows "
            f"{bad[:, 0].min()}..{bad[:, 0].max()}, columns {bad[:, 1].min()}..{bad[:, 1].max()}")


@pytest.mark.parametrize("col0, row0, where", [
    pytest.param(8, 16, "inside the tensor", id="inside"),
    pytest.param(64, 80, "over the last row and column (20 of 32 rows and 8 of 16 columns inside)", id="over_the_edge"),
    pytest.param(-8, -4, "before the first row and column (negative coordinates)", id="negative_start"),
])
def test_tma_copies_a_tile_with_zero_fill(cupy_on_hopper, tmp_path: Path, col0: int, row0: int, where: str) -> None:
    cupy = cupy_on_hopper
    box = (32, 16)                      # rows x columns; 64 bytes innermost
    module = _load_sm90a(tmp_path, TMA_KERNEL, "tma.cu", f"-DBOX_ROWS={box[0]}", f"-DBOX_COLS={box[1]}")
    host, a = _tensor(cupy)
    tmap = gk.tensor_map(a, box, swizzle=0)
    got, status = _run_tile(cupy, module, tmap, box, col0, row0)
    assert status[1] == 0, (f"box {where}: the mbarrier never completed within ~2 s: the copy did not deliver "
                            f"{box[0] * box[1] * 4} bytes (tensor map or expect_tx count wrong)")
    assert status[0] % 128 == 0, f"the shared tile is not 128-byte aligned (address % 1024 = {status[0]})"
    want = _expected_box(host, box, col0, row0)
    assert np.array_equal(got.reshape(box), want), f"box {where}: " + _describe(got.reshape(box), want)


def test_tma_128_byte_swizzle_matches_the_documented_pattern(cupy_on_hopper, tmp_path: Path) -> None:
    """swizzle=128 (tensor_map's default): within each 1024-byte block of the shared tile, the
    16-byte chunk j of 128-byte row i lands at chunk j ^ (i % 8) (CUTLASS's Swizzle<3,4,3>)."""
    cupy = cupy_on_hopper
    box, col0, row0 = (16, 32), 32, 8   # 32 float32 = 128 bytes innermost: exactly the swizzle span
    module = _load_sm90a(tmp_path, TMA_KERNEL, "tma_swizzle.cu", f"-DBOX_ROWS={box[0]}", f"-DBOX_COLS={box[1]}")
    host, a = _tensor(cupy)
    got, status = _run_tile(cupy, module, gk.tensor_map(a, box), box, col0, row0)
    assert status[1] == 0, "the mbarrier never completed within ~2 s with the 128-byte swizzle map"
    assert status[0] == 0, (f"the shared tile is not 1024-byte aligned (address % 1024 = {status[0]}): the "
                            "swizzle pattern cannot be checked")
    logical = host[row0:row0 + box[0], col0:col0 + box[1]]
    want = np.empty(box[0] * box[1], dtype=np.float32)
    for r in range(box[0]):
        for c in range(box[1]):
            o = r * 128 + c * 4
            want[(o ^ (((o >> 7) & 7) << 4)) // 4] = logical[r, c]
    if not np.array_equal(got, want):
        plain = np.array_equal(got, logical.reshape(-1))
        raise AssertionError("128-byte swizzle: " + ("the tile came unswizzled (swizzle not applied)" if plain else
                             _describe(got.reshape(box), want.reshape(box))))
