"""Fixtures that are a reference solution with one named change, built at test time.

A fixture that differs from ``solutions/<exercise>/`` in a line or two is kept here as that change,
not as a copy of the solution: a copy drifts from the solution it claims to vary (issue 18). Each
:class:`Variant` names the exercise, the file, the exact text it replaces (which must occur once)
and what replaces it; :func:`build` copies the reference solution's folder and applies it.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Variant:
    """``solutions/<exercise>/`` with ``old`` replaced by ``new`` in ``file``; with ``until``, the
    text from ``old`` up to (not including) the first ``until`` after it is replaced (a block named
    by its first line and what follows it, not copied whole); ``why``: what the change does and
    what the grader must make of it; ``more``: further (file, old, new) changes of the same
    variant, applied in order (a change that spans several places)."""
    exercise: str
    file: str
    old: str
    new: str
    why: str
    more: tuple[tuple[str, str, str], ...] = ()
    until: str = ""


# ex15's consumers, from their accumulators' declaration up to the epilogue (the reference's: per
# k-block a fresh accumulator set, then the promotion into fp32 with the k-block's scales; two
# k-blocks in flight, or one in the _serial kernel), and as the shortcut writes them (one
# accumulator over all of K on the tensor core, the first k-block's scales applied once after the
# loop).
_EX15_PROMOTED = "        float acc[H_ACC], blk[H_ACC], blk2[H_ACC];\n"
_EX15_PROMOTED_END = "\n            // Epilogue: the accumulator layout to D (bfloat16), guarded.\n"
_EX15_NOT_PROMOTED = """\
        float acc[H_ACC];
#pragma unroll
        for (int i = 0; i < H_ACC; ++i)
            acc[i] = 0.f;                                       // never read (scale-d = 0), but defined
        int s = 0;
        unsigned phase = 0;
        for (int t = blockIdx.x; t < num_tiles; t += gridDim.x) {
            int tm, tn;
            tile_coords(t, tiles_m, tiles_n, group_m, tm, tn);
            // this thread's two rows of the tile (the accumulator layout in the header)
            const int row0 = tm * H_BM + c * 64 + warp * 16 + lane / 4, row1 = row0 + 8;
            const float* sa_row0 = scale_a + static_cast<size_t>(min(row0, M - 1)) * k_blocks;
            const float* sa_row1 = scale_a + static_cast<size_t>(min(row1, M - 1)) * k_blocks;
            const float* sb_row = scale_b + static_cast<size_t>(tn) * k_blocks;   // BN = 128: tile column tn
            for (int kb = 0; kb < k_blocks; ++kb) {
                mbar_wait(bars + 8 * s, phase);                  // stage s loaded
                const unsigned long long da = smem_desc(sa_tiles + s * H_A_BYTES + c * 64 * 128);
                const unsigned long long db = smem_desc(sb_tiles + s * H_B_BYTES);
                acc_fence(acc);
                wgmma_fence();
                // NO PROMOTION: one accumulator across all k-blocks; scale-d = 0 only for the
                // tile's first k32 step
#pragma unroll
                for (int kk = 0; kk < H_BK / 32; ++kk)          // +32 bytes = +2 in the address field
                    wgmma_e4m3(acc, da + 2 * kk, db + 2 * kk, kb != 0 || kk != 0);
                wgmma_commit();
                wgmma_wait<0>();
                acc_fence(acc);
                if (lane == 0)
                    mbar_arrive(bars + 8 * (H_STAGES + s));      // this warp is done with stage s
                if (++s == H_STAGES) {
                    s = 0;
                    phase ^= 1;
                }
            }

            // THE SHORTCUT: the scales once, the first k-block's (rows >= M read row M - 1's: never stored)
            {
                const float bs = __ldg(sb_row);
                const float s0 = __ldg(sa_row0) * bs, s1 = __ldg(sa_row1) * bs;
#pragma unroll
                for (int j = 0; j < H_ACC / 4; ++j) {
                    acc[4 * j + 0] *= s0;
                    acc[4 * j + 1] *= s0;
                    acc[4 * j + 2] *= s1;
                    acc[4 * j + 3] *= s1;
                }
            }
"""


# ex13's producer warpgroup as the reference has it (one thread issues the TMA loads) and as the
# WGMMA-without-TMA rung writes it: the 128 producer threads copy each stage with 16-byte cp.async
# into the same 128-byte-swizzled layout the TMA writes (chunk j of row r at chunk j ^ (r % 8)),
# zero-filling rows past M or N and columns past Kp as the TMA does; each thread, once its copies
# of a stage have landed (cp.async.wait_group, H_LAG stages behind), fences them into the async
# proxy that wgmma reads through and arrives on the stage's full barrier (count 128): cp.async
# writes through the generic proxy, and the fence before the release is what wgmma needs (PTX ISA,
# "Asynchronous proxy"); the other direction (wgmma reads, then cp.async overwrites after the empty
# barrier) needs nothing, since a completed wgmma implies a generic-async proxy fence. The kernel's
# comments still describe the TMA; TmaDesc and the TMA helpers stay, unused.
_EX13_TMA_PRODUCER = """\
        if (threadIdx.x == 0) {
            tma_prefetch(tma_a);
            tma_prefetch(tma_b);
            int s = 0;
            unsigned phase = 0;
            for (int t = blockIdx.x; t < num_tiles; t += gridDim.x) {
                int tm, tn;
                tile_coords(t, tiles_m, tiles_n, group_m, tm, tn);
                for (int kt = 0; kt < k_tiles; ++kt) {
                    mbar_wait(bars + 8 * (H_STAGES + s), phase ^ 1);    // stage s free
                    const unsigned full = bars + 8 * s;
                    mbar_arrive_expect_tx(full, H_STAGE_BYTES);
                    tma_load_2d(sa + s * H_A_BYTES, tma_a, full, kt * H_BK, tm * H_BM);
                    tma_load_2d(sb + s * H_B_BYTES, tma_b, full, kt * H_BK, tn * H_BN);
                    if (++s == H_STAGES) {
                        s = 0;
                        phase ^= 1;
                    }
                }
            }
        }
"""
_EX13_CP_ASYNC_PRODUCER = """\
        {   // FIXTURE wgmma_cp_async: all 128 producer threads copy with cp.async (no TMA)
            const int ptid = threadIdx.x;                           // 0 .. 127
            int s = 0, issued = 0, arrived = 0;                     // k-tiles issued / made visible
            unsigned phase = 0;
            for (int t = blockIdx.x; t < num_tiles; t += gridDim.x) {
                int tm, tn;
                tile_coords(t, tiles_m, tiles_n, group_m, tm, tn);
                for (int kt = 0; kt < k_tiles; ++kt) {
                    mbar_wait(bars + 8 * (H_STAGES + s), phase ^ 1);    // stage s free
                    // 16-byte chunk j of tile row r: thread ptid copies chunks ptid, ptid + 128, ...
                    // (A: 128 rows x 8 chunks, B: 256 rows x 8); loops not unrolled: the producer
                    // has 40 registers after setmaxnreg.dec
                    const int gcol = kt * H_BK + (ptid & 7) * 8;    // the same column for all its chunks
#pragma unroll 1
                    for (int i = 0; i < H_BM * 8 / 128; ++i) {
                        const int r = (ptid >> 3) + 16 * i, j = ptid & 7;
                        const bool ok = tm * H_BM + r < M && gcol < lda;
                        const T* src = A + (ok ? static_cast<size_t>(tm * H_BM + r) * lda + gcol : 0);
                        cp_async16_zfill(sa + s * H_A_BYTES + r * 128 + ((j ^ (r & 7)) << 4), src, ok);
                    }
#pragma unroll 1
                    for (int i = 0; i < H_BN * 8 / 128; ++i) {
                        const int r = (ptid >> 3) + 16 * i, j = ptid & 7;
                        const bool ok = tn * H_BN + r < N && gcol < lda;
                        const T* src = B + (ok ? static_cast<size_t>(tn * H_BN + r) * lda + gcol : 0);
                        cp_async16_zfill(sb + s * H_B_BYTES + r * 128 + ((j ^ (r & 7)) << 4), src, ok);
                    }
                    cp_async_commit_group();
                    ++issued;
                    if (issued - arrived > H_LAG) {                 // the stage H_LAG k-tiles back has landed
                        cp_async_wait_group<H_LAG>();
                        fence_proxy_async_shared();
                        mbar_arrive(bars + 8 * (arrived % H_STAGES));
                        ++arrived;
                    }
                    if (++s == H_STAGES) {
                        s = 0;
                        phase ^= 1;
                    }
                }
            }
            cp_async_wait_group<0>();
            fence_proxy_async_shared();
            for (; arrived < issued; ++arrived)
                mbar_arrive(bars + 8 * (arrived % H_STAGES));
        }
"""
_EX13_CP_ASYNC_HELPERS = """\
// ---- FIXTURE wgmma_cp_async: cp.async instead of the TMA ----------------------------------------
#define H_LAG 2                 // k-tiles a producer thread keeps in flight before arriving
static_assert(H_LAG >= 0 && H_LAG <= H_STAGES - 2,
              "to issue k-tile g the producer needs g - STAGES released, i.e. g - STAGES + 1 signalled full");
__device__ __forceinline__ void cp_async16_zfill(unsigned dst, const void* src, bool ok)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\\n" :: "r"(dst), "l"(src), "r"(ok ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_async_commit_group() { asm volatile("cp.async.commit_group;\\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait_group()
{
    asm volatile("cp.async.wait_group %0;\\n" :: "n"(N) : "memory");
}
// generic-proxy writes (cp.async, st.shared) before async-proxy reads (wgmma) of shared memory
__device__ __forceinline__ void fence_proxy_async_shared() { asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory"); }

// ---- TMA ------------------------------------------------------------------------------------
"""

VARIANTS = {
    "ex16_paged_decode_attention_no_split": Variant(
        "ex16_paged_decode_attention", "solution.py",
        "_P_MIN = 32 ", "_P_MIN = 1 << 20  # FIXTURE no_split: never split (the reference: 32) ",
        "one CTA per (sequence, KV head), no split-K: correct, but batch 1 at 131072 tokens keeps 8 of "
        "132 SMs busy: clearly fewer performance points"),
    "ex16_paged_decode_attention_reads_past_context": Variant(
        "ex16_paged_decode_attention", "kernel.cu",
        "cp_async16(smem_addr(sv + t * PD_ROW + col), vc + off, t < ntok);",
        "cp_async16(smem_addr(sv + t * PD_ROW + col), vc + off, true);   // FIXTURE: V past the context loaded",
        "V rows past the context are loaded (their scores are still masked, p = 0): right on finite data, "
        "NaN (0 * NaN) where the grader poisons the slots no sequence reads: fails correctness"),
    "ex15_gemm_fp8_blockscaled_no_promotion": Variant(
        "ex15_gemm_fp8_blockscaled", "kernel.cu", _EX15_PROMOTED, _EX15_NOT_PROMOTED,
        "one accumulator across all k-blocks and the scales once at the end (the first k-block's): "
        "wrong on every case whose scales differ between k-blocks (every case with K >= 256): fails "
        "correctness", until=_EX15_PROMOTED_END),
    "ex13_gemm_hopper_wgmma_cp_async": Variant(
        "ex13_gemm_hopper", "kernel.cu", _EX13_TMA_PRODUCER, _EX13_CP_ASYNC_PRODUCER,
        "the ladder's middle rung: the reference's wgmma consumers fed by cp.async copies instead of "
        "the TMA (the same swizzled tiles): correct; wgmma is in its PTX (all ex13 requires), so its "
        "speed is scored: some performance points, fewer than the reference's; its ratios, between "
        "ex12's mma.sync and the reference, go to the log",
        more=(("kernel.cu", "// ---- TMA ------------------------------------------------------------------------------------\n",
               _EX13_CP_ASYNC_HELPERS),
              ("kernel.cu", "mbar_init(bars + 8 * s, 1);                          // full: the producer's arrive",
               "mbar_init(bars + 8 * s, 128);                        // full: FIXTURE: the 128 producer threads"),
              ("kernel.cu", "gemm_hopper_body(const TmaDesc* tma_a, const TmaDesc* tma_b, T* __restrict__ C,",
               "gemm_hopper_body(const T* __restrict__ A, const T* __restrict__ B, int lda, T* __restrict__ C,"),
              ("kernel.cu", "gemm_hopper_body<T>(&tma_a, &tma_b, C,", "gemm_hopper_body<T>(A, B, lda, C,"),
              ("kernel.cu", "gemm_hopper_f16(const __grid_constant__ TmaDesc tma_a, const __grid_constant__ TmaDesc tma_b, __half* C,",
               "gemm_hopper_f16(const __half* A, const __half* B, int lda, __half* C,"),
              ("kernel.cu", "gemm_hopper_bf16(const __grid_constant__ TmaDesc tma_a, const __grid_constant__ TmaDesc tma_b, __nv_bfloat16* C,",
               "gemm_hopper_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, int lda, __nv_bfloat16* C,"),
              ("solution.py", "    map_a = _tensor_map(a, kind, _BM, _BK)\n    map_b = _tensor_map(b, kind, _BN, _BK)\n", ""),
              ("solution.py", "(map_a, map_b, c, np.int32(M),", "(a, b, np.int32(kp), c, np.int32(M),"))),
}


def build(name: str, dest: Path) -> Path:
    """Write variant ``name`` into the folder ``dest`` (created; must not exist) and return it.

    Raises:
        KeyError: no such variant. AssertionError: an ``old`` text does not occur exactly once in
        the reference's file, or ``until`` does not follow it (the reference changed: update the
        variant).
    """
    v = VARIANTS[name]
    shutil.copytree(ROOT / "solutions" / v.exercise, dest, ignore=shutil.ignore_patterns("__pycache__"))
    for k, (file, old, new) in enumerate(((v.file, v.old, v.new), *v.more)):
        path = dest / file
        text = path.read_text()
        assert text.count(old) == 1, f"{name}: {old!r} occurs {text.count(old)} times in solutions/{v.exercise}/{file}"
        if k == 0 and v.until:
            at = text.index(old)
            stop = text.find(v.until, at + len(old))
            assert stop >= 0, f"{name}: {v.until!r} does not follow {old!r} in solutions/{v.exercise}/{file}"
            old = text[at:stop]
        path.write_text(text.replace(old, new))
    return dest
