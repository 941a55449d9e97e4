// drafts/ex14_fa3 -- a FlashAttention-3-style forward pass for ex14 on Hopper (sm_90a): TMA loads
// of Q, K and V tiles into shared memory, wgmma for S = Q K^T (both operands from shared memory)
// and for O += P V (P from registers), a producer warpgroup and two consumer warpgroups.
// WRITTEN ON THE CPU MACHINE (2026-12-04, twenty-sixth session); first run on an H200 in the
// twenty-seventh (verify.py --quick: 6 of 6 checks OK). drafts/ex14_fa3/README.md says how to check it.
//
// Same contract as solutions/ex14_flash_attention: q (B, H, Sq, D), k and v (B, H, Sk, D), float16
// or bfloat16 bits, D in {64, 128}; o (B, H, Sq, D) and lse (B, H, Sq) float32; causal masks key j
// for query i when j > i (top-left aligned), so every row sees key 0 and no row is fully masked.
//
// Design (one CTA per 128 query rows of one (batch, head); 384 threads = 3 warpgroups):
//   warpgroup 0, producer (setmaxnreg.dec 40): one thread issues 3-D TMA loads (the tensors seen
//     as (B*H, S, D): a box never crosses into the next head, rows past S read as zeros) of the Q
//     tile once, then of each key tile's K (128 keys x D) and V^T (D x 128 keys) into a 2-stage
//     ring; K and V^T have separate "full" barriers, so S = Q K^T can start before V^T lands.
//   warpgroups 1-2, consumers (setmaxnreg.inc 232): consumer c owns query rows 64c .. 64c + 63 of
//     the tile. Per key tile: S (64 x 128, fp32, 64 registers a thread) by wgmma m64n128k16 over D
//     (A = Q, B = K, both K-major from shared memory, 128-byte swizzle: ex13's descriptor); mask;
//     online softmax in the log2 domain (FlashAttention-2's, as solutions/ex14 does it); P packed to
//     the inputs' type in the A-register layout of wgmma (which is the accumulator layout of S,
//     pairs of columns: the trick FlashAttention-3 uses); O (64 x D) rescaled, then O += P V by
//     wgmma m64nDk16 with A from registers and B = V^T (K-major, so the descriptor is the same as
//     K's); then the stage is released (empty barrier, one arrive per consumer warp).
//   V is transposed into a scratch buffer (B*H, D, Sk rounded up to 8) by fa3_transpose_v before
//     the attention kernel, so that V^T's rows (one per d) are K-major for the P V wgmma; this
//     costs one extra pass over V (~4 % at B4 H16 S4096 D128). Dropping it needs the MN-major
//     (transposed, imm-trans-b = 1) descriptor of V as the TMA writes it; not done here.
// Shared memory (D = 128): Q 32 KB, 2 x (K 32 KB + V^T 32 KB), 7 barriers: 164,928 bytes.
//
// Three kernels share this body (fa3_body's comment): fa3_* as above (S, softmax, P V in turn; 2
// stages); fa3p_* with FlashAttention-3's intra-warpgroup overlap (S_j issued together with the P V
// of tile j - 1, whose tensor-core time hides tile j's softmax; 3 stages: 229 KB of shared memory at
// D = 128); fa3pp_* that and the ping-pong of the two consumer warpgroups (named barriers: one's
// softmax runs under the other's GEMMs). Only fa3_* has run (2026-12-04, H200: six small checks OK);
// fa3p/fa3pp were written on the CPU machine the same day (168 registers, no spills, nvcc 13.0).
// Not yet here: a persistent grid, V read MN-major without the transpose pass, FP8.

// Fragment layouts (PTX ISA, "WGMMA .m64nNk16 register fragment layout"): warp w of a warpgroup owns
// rows 16w .. 16w + 15; lane l = 4g + t holds, for each 8-column slice j, d[4j + 0..1] at row 16w + g,
// columns 8j + 2t + 0..1, and d[4j + 2..3] at row 16w + g + 8, same columns. The A operand from
// registers (m64k16, 16-bit types): a0 (row g, cols 2t..2t+1), a1 (row g + 8, same), a2 (row g, cols
// 2t + 8..), a3 (row g + 8, cols 2t + 8..), per warp's 16 rows: for k-step kk (keys 16kk .. 16kk + 15)
// that is S's slices 2kk and 2kk + 1: a0 = (d[8kk], d[8kk+1]), a1 = (d[8kk+2], d[8kk+3]),
// a2 = (d[8kk+4], d[8kk+5]), a3 = (d[8kk+6], d[8kk+7]).

#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define F3_BM 128
#define F3_BN 128
#define F3_THREADS 384
#define F3_STAGES 2
#define F3_NEG_INF __int_as_float(0xff800000)
// P is computed as 2^F3_P_SHIFT exp(s - m) (<= 2^15 (1 + 2^-17): rounds to <= 32768 < 65504), so that
// packing it to float16 keeps weights down to 2^-39 (2^-24 unshifted): float16's subnormals start at
// 2^-14, and below that a weight errs by up to 2^-25 ABSOLUTELY, which ex14's bound (2^-6 P |V|,
// elementwise) does not allow where the dominant key's v[d] is 0 (twenty-ninth session: the fp16
// causal "large" failure). l and O carry the same factor (O = acc / l is unchanged); the LSE takes it
// off. Exact (a power of 2) for bfloat16 too. Safe while ulp(m scale_log2) < 2, i.e. scores < 2^24.
#define F3_P_SHIFT 15.f
// bytes of one Q, K or V^T tile (128 x D halves = 256 D bytes); the dynamic shared memory: 1024 of
// slack to align the base to 1024 (swizzle atoms), Q, STAGES x (K, V^T), 7 barriers padded to 64
#define F3_TILE(D) (256 * (D))
#define F3_SMEM(D) (1024 + F3_TILE(D) * (1 + 2 * F3_STAGES) + 64)
// the pipelined kernels (fa3p_*, fa3pp_*) keep K and V^T of a tile until the P V of the NEXT tile is
// done, so they need a third stage to keep a tile's loads in flight: 3 stages, 10 barriers (80 bytes)
#define F3P_STAGES 3
#define F3P_SMEM(D) (1024 + F3_TILE(D) * (1 + 2 * F3P_STAGES) + 128)

// a CUtensorMap (cuda.h) is 128 opaque bytes, 64-byte aligned (NVRTC has no cuda.h)
struct __align__(64) TmaDesc {
    unsigned long long opaque[16];
};

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)

#define F3_R64 "{" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
    "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, " \
    "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, " \
    "%56, %57, %58, %59, %60, %61, %62, %63" \
    "}"
#define F3_R32 "{" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
    "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31" \
    "}"
#define F3_ACC64 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
    "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
    "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
    "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define F3_ACC32 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

__device__ __forceinline__ unsigned f3_smem(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// ---- mbarrier and TMA (as solutions/ex13_gemm_hopper/kernel.cu) ------------------------------
__device__ __forceinline__ void f3_bar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void f3_bar_expect_tx(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void f3_bar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void f3_bar_wait(unsigned bar, unsigned parity)
{
    unsigned done = 0;
    while (!done) {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    }
}
__device__ __forceinline__ void f3_tma_prefetch(const TmaDesc* map)
{
    asm volatile("prefetch.tensormap [%0];\n" :: "l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}
// the box at (c0 innermost, c1, c2) of a 3-D map into shared memory at dst; completes tx bytes on bar
__device__ __forceinline__ void f3_tma_3d(unsigned dst, const TmaDesc* map, unsigned bar, int c0, int c1, int c2)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3, %4, %5}], [%2];\n"
                 :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}

// ---- wgmma ----------------------------------------------------------------------------------
// K-major tile written by the TMA with 128-byte swizzle: start >> 4, leading byte offset 1 (unused),
// stride byte offset 1024 >> 4 (8 rows x 128 bytes), swizzle mode 1 (128B); ex13's descriptor
__device__ __forceinline__ unsigned long long f3_desc(unsigned addr)
{
    return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4) | (1ull << 16)
         | (static_cast<unsigned long long>(1024 >> 4) << 32) | (1ull << 62);
}
__device__ __forceinline__ void f3_wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void f3_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void f3_wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// pins registers to this point of the asm order (the wgmma asm says nothing about its asynchrony)
template <int N> __device__ __forceinline__ void f3_pin(float (&d)[N])
{
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}
template <int N> __device__ __forceinline__ void f3_pin(unsigned (&d)[N])
{
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+r"(d[i]) :: "memory");
}

#define F3_SS_N128(TY)                                                                                  \
    static __device__ __forceinline__ void qk(float (&d)[64], unsigned long long da, unsigned long long db, \
                                              int accumulate)                                           \
    {                                                                                                   \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                       \
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " F3_R64                \
                     ", %64, %65, p, 1, 1, 0, 0;\n}\n"                                                  \
                     : F3_ACC64 : "l"(da), "l"(db), "r"(accumulate));                                  \
    }
#define F3_RS_N128(TY)                                                                                  \
    static __device__ __forceinline__ void pv(float (&d)[64], const unsigned* a, unsigned long long db)   \
    {                                                                                                   \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                       \
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " F3_R64                \
                     ", {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"                                    \
                     : F3_ACC64 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));         \
    }
#define F3_RS_N64(TY)                                                                                   \
    static __device__ __forceinline__ void pv(float (&d)[32], const unsigned* a, unsigned long long db)   \
    {                                                                                                   \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                       \
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " F3_R32                 \
                     ", {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"                                    \
                     : F3_ACC32 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));         \
    }

template <typename T> struct F3Type;
template <> struct F3Type<__half> {
    F3_SS_N128("f16")
    F3_RS_N128("f16")
    F3_RS_N64("f16")
    static __device__ __forceinline__ unsigned pack(float lo, float hi)
    {
        __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<unsigned*>(&h);
    }
};
template <> struct F3Type<__nv_bfloat16> {
    F3_SS_N128("bf16")
    F3_RS_N128("bf16")
    F3_RS_N64("bf16")
    static __device__ __forceinline__ unsigned pack(float lo, float hi)
    {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<unsigned*>(&h);
    }
};

__device__ __forceinline__ float f3_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// mask where the tile (keys n0 .. n0 + 127) can hold a masked key (past Sk, or above the diagonal of
// the consumer's first row `first_row`); online softmax in the log2 domain (solutions/ex14's): sc
// becomes P (fp32, times 2^F3_P_SHIFT), m_run / l_run are updated (l_run times 2^F3_P_SHIFT too),
// alpha is the factor the running O must be scaled by
__device__ __forceinline__ void f3_softmax_tile(float (&sc)[64], float (&alpha)[2], float (&m_run)[2], float (&l_run)[2],
                                                const int (&rows)[2], int first_row, int n0, int t, int Sk, int causal,
                                                float scale_log2)
{
    const bool need_mask = n0 + F3_BN > Sk || (causal && n0 + F3_BN - 1 > first_row);
    float tile_max[2] = {F3_NEG_INF, F3_NEG_INF};
#pragma unroll
    for (int sl = 0; sl < 16; ++sl) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int r = e >> 1;
            if (need_mask) {
                const int key = n0 + 8 * sl + 2 * t + (e & 1);
                if (key >= Sk || (causal && key > rows[r])) sc[4 * sl + e] = F3_NEG_INF;
            }
            tile_max[r] = fmaxf(tile_max[r], sc[4 * sl + e]);
        }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
        const float m_new = fmaxf(m_run[r], tile_max[r]);
        const float b = m_new == F3_NEG_INF ? 0.f : m_new * scale_log2;   // never -inf - -inf
        alpha[r] = f3_exp2(m_run[r] * scale_log2 - b);
        m_run[r] = m_new;
        l_run[r] *= alpha[r];
        const float bp = b - F3_P_SHIFT;           // P = 2^15 exp(s - m): see F3_P_SHIFT
#pragma unroll
        for (int sl = 0; sl < 16; ++sl) {
            sc[4 * sl + 2 * r] = f3_exp2(fmaf(sc[4 * sl + 2 * r], scale_log2, -bp));
            sc[4 * sl + 2 * r + 1] = f3_exp2(fmaf(sc[4 * sl + 2 * r + 1], scale_log2, -bp));
            l_run[r] += sc[4 * sl + 2 * r] + sc[4 * sl + 2 * r + 1];
        }
    }
}
// P (fp32, S's accumulator layout) -> the inputs' type in wgmma's A-register layout
template <typename T> __device__ __forceinline__ void f3_pack(const float (&sc)[64], unsigned (&pa)[32])
{
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) {
        pa[4 * kk + 0] = F3Type<T>::pack(sc[8 * kk + 0], sc[8 * kk + 1]);
        pa[4 * kk + 1] = F3Type<T>::pack(sc[8 * kk + 2], sc[8 * kk + 3]);
        pa[4 * kk + 2] = F3Type<T>::pack(sc[8 * kk + 4], sc[8 * kk + 5]);
        pa[4 * kk + 3] = F3Type<T>::pack(sc[8 * kk + 6], sc[8 * kk + 7]);
    }
}
// O *= alpha per row: slice i holds acc[4i..4i+1] of row 0, acc[4i+2..4i+3] of row 1
template <int D> __device__ __forceinline__ void f3_rescale(float (&acc)[D / 2], const float (&alpha)[2])
{
#pragma unroll
    for (int i = 0; i < D / 8; ++i) {
        acc[4 * i + 0] *= alpha[0];
        acc[4 * i + 1] *= alpha[0];
        acc[4 * i + 2] *= alpha[1];
        acc[4 * i + 3] *= alpha[1];
    }
}

// issue S = Q K^T for this consumer's 64 rows (64 x 128, fp32) from shared memory: Q box kk / 4 at
// rows 64c, +32 bytes per k-step of 16; K box kk / 4 of the stage at sK_stage
template <typename T, int D>
__device__ __forceinline__ void f3_issue_qk(float (&sc)[64], unsigned sQ, unsigned sK_stage, int c)
{
    constexpr unsigned BOX = F3_BM * 128;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
        const unsigned long long da = f3_desc(sQ + (kk / 4) * BOX + c * 64 * 128 + (kk % 4) * 32);
        const unsigned long long db = f3_desc(sK_stage + (kk / 4) * BOX + (kk % 4) * 32);
        F3Type<T>::qk(sc, da, db, kk != 0);
    }
}
// issue O += P V^T-tile: P from registers, V^T box kk / 4 (keys 64 (kk / 4) ..) of the stage at
// sV_stage, +32 bytes per k-step of 16 keys
template <typename T, int D>
__device__ __forceinline__ void f3_issue_pv(float (&acc)[D / 2], const unsigned (&pa)[32], unsigned sV_stage)
{
    constexpr unsigned VBOX = D * 128;
#pragma unroll
    for (int kk = 0; kk < F3_BN / 16; ++kk)
        F3Type<T>::pv(acc, pa + 4 * kk, f3_desc(sV_stage + (kk / 4) * VBOX + (kk % 4) * 32));
}
// named barriers 1 and 2 (0 is __syncthreads): the two consumer warpgroups (256 threads) take turns
// issuing their wgmma (FlashAttention-3's "ping-pong"): one's softmax runs under the other's GEMMs
__device__ __forceinline__ void f3_named_sync(int id) { asm volatile("bar.sync %0, 256;\n" :: "r"(id) : "memory"); }
__device__ __forceinline__ void f3_named_arrive(int id) { asm volatile("bar.arrive %0, 256;\n" :: "r"(id) : "memory"); }
__device__ __forceinline__ void f3_wg_wait1() { asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory"); }

// One CTA: 128 query rows of one (batch, head). STAGES K/V^T stages. PIPE = false: per key tile j,
// S_j, softmax, O += P_j V_j, in that order (each wgmma waited for). PIPE = true (FlashAttention-3's
// intra-warpgroup overlap): S_j and the P V of tile j - 1 are issued together, the softmax of tile j
// runs while that P V is still in the tensor cores (wait_group 1 waits for S_j only), and the
// rescale of O by tile j's alpha and the packing of P_j wait for it (wait_group 0); the last P V
// after the loop. O stays right: before tile j's GEMMs O holds alpha_{j-1}-scaled sums up to tile
// j - 2, the P V adds P_{j-1} V_{j-1}, then O *= alpha_j. A stage is released after the P V that
// reads its V^T, a tile later than without PIPE, hence 3 stages. PINGPONG (with PIPE): the two
// consumers take turns issuing their GEMMs (named barriers 1 and 2; consumer 1 lets consumer 0 go
// first; every turn ends with an arrive on the other's barrier, and consumer 0 takes one more sync
// at the end so that every arrive is matched: both consumers have n_tiles + 1 turns).
template <typename T, int D, int STAGES, bool PIPE, bool PINGPONG>
__device__ __forceinline__ void fa3_body(const TmaDesc* tq, const TmaDesc* tk, const TmaDesc* tv, float* __restrict__ o,
                                         float* __restrict__ lse, int Sq, int Sk, int causal, float scale_log2)
{
    static_assert(PIPE || !PINGPONG, "ping-pong is built on the pipelined loop");
    constexpr unsigned TILE = F3_TILE(D);
    constexpr unsigned BOX = F3_BM * 128;          // one 128-row x 64-column box of Q or K: 16 KB
    constexpr unsigned VBOX = D * 128;             // one D-row x 64-key box of V^T
    extern __shared__ unsigned char f3_raw[];
    const unsigned base = (f3_smem(f3_raw) + 1023u) & ~1023u;
    const unsigned sQ = base, sK = sQ + TILE, sV = sK + STAGES * TILE;
    const unsigned bars = sV + STAGES * TILE;      // q_full, k_full[STAGES], v_full[STAGES], empty[STAGES]
    const unsigned q_full = bars;
    auto k_full = [&](int st) { return bars + 8 * (1 + st); };
    auto v_full = [&](int st) { return bars + 8 * (1 + STAGES + st); };
    auto empty = [&](int st) { return bars + 8 * (1 + 2 * STAGES + st); };
    const int wg = threadIdx.x / 128;
    // grid (B * H, m tiles), as solutions/ex14's: blockIdx.x (the head) varies fastest in the order
    // CTAs start, so causal runs the longest query tiles of every head first (longest processing
    // time first) instead of every tile of the first heads (thirtieth session; was (m tiles, B * H))
    const int mtile = causal ? (int)gridDim.y - 1 - (int)blockIdx.y : (int)blockIdx.y;
    const int bh = blockIdx.x, m0 = mtile * F3_BM;
    const int kv_end = causal ? min(Sk, m0 + F3_BM) : Sk;
    const int n_tiles = (kv_end + F3_BN - 1) / F3_BN;   // >= 1

    if (threadIdx.x == 0) {
        f3_bar_init(q_full, 1);
        for (int st = 0; st < STAGES; ++st) {
            f3_bar_init(k_full(st), 1);
            f3_bar_init(v_full(st), 1);
            f3_bar_init(empty(st), 8);             // 8 consumer warps
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (threadIdx.x == 0) {
            f3_tma_prefetch(tq);
            f3_tma_prefetch(tk);
            f3_tma_prefetch(tv);
            f3_bar_expect_tx(q_full, TILE);
#pragma unroll
            for (int h = 0; h < D / 64; ++h)
                f3_tma_3d(sQ + h * BOX, tq, q_full, 64 * h, m0, bh);
            for (int j = 0; j < n_tiles; ++j) {
                const int st = j % STAGES;
                const unsigned phase = (unsigned)(j / STAGES) & 1u;
                f3_bar_wait(empty(st), phase ^ 1u);   // stage st free
                f3_bar_expect_tx(k_full(st), TILE);
#pragma unroll
                for (int h = 0; h < D / 64; ++h)
                    f3_tma_3d(sK + st * TILE + h * BOX, tk, k_full(st), 64 * h, j * F3_BN, bh);
                f3_bar_expect_tx(v_full(st), TILE);
#pragma unroll
                for (int h = 0; h < F3_BN / 64; ++h)
                    f3_tma_3d(sV + st * TILE + h * VBOX, tv, v_full(st), j * F3_BN + 64 * h, 0, bh);
            }
        }
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    const int c = wg - 1;
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int rows[2] = {m0 + 64 * c + 16 * warp + g, m0 + 64 * c + 16 * warp + g + 8};
    float acc[D / 2];                              // O, m64nD
    float sc[64];                                  // S then P, m64n128
    unsigned pa[32];                               // P in the inputs' type, A-register layout
    float m_run[2] = {F3_NEG_INF, F3_NEG_INF}, l_run[2] = {0.f, 0.f};
    float alpha[2];
#pragma unroll
    for (int i = 0; i < D / 2; ++i) acc[i] = 0.f;
    f3_bar_wait(q_full, 0);
    const int my_turn = 1 + c, their_turn = 2 - c;  // named barrier ids
    if (PINGPONG && c == 1) f3_named_arrive(1);    // consumer 0 goes first

    if constexpr (!PIPE) {
        for (int j = 0; j < n_tiles; ++j) {
            const int st = j % STAGES;
            const unsigned phase = (unsigned)(j / STAGES) & 1u;
            f3_bar_wait(k_full(st), phase);        // K_j landed
            f3_pin(sc);
            f3_wg_fence();
            f3_issue_qk<T, D>(sc, sQ, sK + st * TILE, c);
            f3_wg_commit();
            f3_wg_wait0();
            f3_pin(sc);
            f3_softmax_tile(sc, alpha, m_run, l_run, rows, m0 + 64 * c, j * F3_BN, t, Sk, causal, scale_log2);
            f3_pack<T>(sc, pa);
            f3_rescale<D>(acc, alpha);
            f3_bar_wait(v_full(st), phase);        // V^T_j landed
            f3_pin(acc);
            f3_pin(pa);
            f3_wg_fence();
            f3_issue_pv<T, D>(acc, pa, sV + st * TILE);
            f3_wg_commit();
            f3_wg_wait0();
            f3_pin(acc);
            f3_pin(pa);
            if (lane == 0) f3_bar_arrive(empty(st));   // stage st may be refilled
        }
    } else {
        // tile 0: S_0 alone
        f3_bar_wait(k_full(0), 0);
        if (PINGPONG) f3_named_sync(my_turn);
        f3_pin(sc);
        f3_wg_fence();
        f3_issue_qk<T, D>(sc, sQ, sK, c);
        f3_wg_commit();
        if (PINGPONG) f3_named_arrive(their_turn);
        f3_wg_wait0();
        f3_pin(sc);
        f3_softmax_tile(sc, alpha, m_run, l_run, rows, m0 + 64 * c, 0, t, Sk, causal, scale_log2);
        f3_pack<T>(sc, pa);                        // O is 0: no rescale
        for (int j = 1; j < n_tiles; ++j) {
            const int st = j % STAGES, sp = (j - 1) % STAGES;
            f3_bar_wait(k_full(st), (unsigned)(j / STAGES) & 1u);        // K_j landed
            f3_bar_wait(v_full(sp), (unsigned)((j - 1) / STAGES) & 1u);  // V^T_{j-1} landed
            if (PINGPONG) f3_named_sync(my_turn);
            f3_pin(sc);
            f3_pin(acc);
            f3_pin(pa);
            f3_wg_fence();
            f3_issue_qk<T, D>(sc, sQ, sK + st * TILE, c);
            f3_wg_commit();
            f3_issue_pv<T, D>(acc, pa, sV + sp * TILE);
            f3_wg_commit();
            if (PINGPONG) f3_named_arrive(their_turn);
            f3_wg_wait1();                         // S_j done; P_{j-1} V_{j-1} may still run
            f3_pin(sc);
            f3_softmax_tile(sc, alpha, m_run, l_run, rows, m0 + 64 * c, j * F3_BN, t, Sk, causal, scale_log2);
            f3_wg_wait0();                         // P_{j-1} V_{j-1} done: pa and acc are free
            f3_pin(acc);
            f3_pin(pa);
            if (lane == 0) f3_bar_arrive(empty(sp));   // K_{j-1} and V^T_{j-1} read: refill
            f3_rescale<D>(acc, alpha);
            f3_pack<T>(sc, pa);
        }
        const int sl = (n_tiles - 1) % STAGES;     // the last P V
        f3_bar_wait(v_full(sl), (unsigned)((n_tiles - 1) / STAGES) & 1u);
        if (PINGPONG) f3_named_sync(my_turn);
        f3_pin(acc);
        f3_pin(pa);
        f3_wg_fence();
        f3_issue_pv<T, D>(acc, pa, sV + sl * TILE);
        f3_wg_commit();
        if (PINGPONG) f3_named_arrive(their_turn);
        f3_wg_wait0();
        f3_pin(acc);
        f3_pin(pa);
        if (PINGPONG && c == 0) f3_named_sync(my_turn);   // matches consumer 1's last arrive
    }

    const size_t head = (size_t)bh * Sq;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float l = l_run[r];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const float inv = 1.f / l;
        if (rows[r] < Sq) {
            float* orow = o + (head + rows[r]) * D;
#pragma unroll
            for (int i = 0; i < D / 8; ++i)
                *reinterpret_cast<float2*>(orow + 8 * i + 2 * t) = make_float2(acc[4 * i + 2 * r] * inv, acc[4 * i + 2 * r + 1] * inv);
            if (t == 0)
                lse[head + rows[r]] = (m_run[r] * scale_log2 + (log2f(l) - F3_P_SHIFT)) * 0.69314718055994531f;
        }
    }
}

#define F3_BODY(T, D, S, P, PP) fa3_body<T, D, S, P, PP>(&tq, &tk, &tv, o, lse, Sq, Sk, causal, scale_log2)
#else
#define F3_BODY(T, D, S, P, PP) __trap()   // not sm_90a: wgmma, setmaxnreg and this kernel do not exist
#endif

// fa3{,p,pp}_{f16,bf16}_d{64,128}: tq the map of q as (B*H, Sq, D), box (1, 128, 64); tk of k as
// (B*H, Sk, D), box (1, 128, 64); tv of V^T as (B*H, D, Skp), box (1, D, 64), all 128-byte swizzle.
// Launch: grid (B * H, ceil(Sq / 128)), 384 threads, F3_SMEM(D) (fa3_*) or F3P_SMEM(D) (fa3p_*,
// fa3pp_*) bytes of dynamic shared memory. fa3: S, softmax, P V in turn; fa3p: the pipelined loop;
// fa3pp: pipelined, the two consumers taking turns (ping-pong).
#define F3_KERNEL(NAME, T, D, S, P, PP)                                                                   \
    extern "C" __global__ void __launch_bounds__(F3_THREADS, 1)                                           \
    NAME(const __grid_constant__ TmaDesc tq, const __grid_constant__ TmaDesc tk,                          \
         const __grid_constant__ TmaDesc tv, float* o, float* lse, int Sq, int Sk, int causal, float scale_log2) \
    {                                                                                                     \
        F3_BODY(T, D, S, P, PP);                                                                          \
    }
F3_KERNEL(fa3_f16_d64, __half, 64, F3_STAGES, false, false)
F3_KERNEL(fa3_f16_d128, __half, 128, F3_STAGES, false, false)
F3_KERNEL(fa3_bf16_d64, __nv_bfloat16, 64, F3_STAGES, false, false)
F3_KERNEL(fa3_bf16_d128, __nv_bfloat16, 128, F3_STAGES, false, false)
F3_KERNEL(fa3p_f16_d64, __half, 64, F3P_STAGES, true, false)
F3_KERNEL(fa3p_f16_d128, __half, 128, F3P_STAGES, true, false)
F3_KERNEL(fa3p_bf16_d64, __nv_bfloat16, 64, F3P_STAGES, true, false)
F3_KERNEL(fa3p_bf16_d128, __nv_bfloat16, 128, F3P_STAGES, true, false)
F3_KERNEL(fa3pp_f16_d64, __half, 64, F3P_STAGES, true, true)
F3_KERNEL(fa3pp_f16_d128, __half, 128, F3P_STAGES, true, true)
F3_KERNEL(fa3pp_bf16_d64, __nv_bfloat16, 64, F3P_STAGES, true, true)
F3_KERNEL(fa3pp_bf16_d128, __nv_bfloat16, 128, F3P_STAGES, true, true)

// vt (BH, D, Skp) = v (BH, Sk, D) transposed per head, keys Sk .. Skp - 1 zero. 16-bit elements.
// Launch: grid (ceil(Skp / 32), D / 32, BH), block (32, 8).
extern "C" __global__ void fa3_transpose_v(const unsigned short* __restrict__ v, unsigned short* __restrict__ vt,
                                           int Sk, int Skp, int D)
{
    __shared__ unsigned short tile[32][33];
    const size_t bh = blockIdx.z;
    const int j0 = blockIdx.x * 32, d0 = blockIdx.y * 32;
    for (int r = threadIdx.y; r < 32; r += 8) {
        const int j = j0 + r;
        tile[r][threadIdx.x] = j < Sk ? v[(bh * Sk + j) * D + d0 + threadIdx.x] : (unsigned short)0;
    }
    __syncthreads();
    for (int r = threadIdx.y; r < 32; r += 8) {
        const int j = j0 + threadIdx.x;
        if (j < Skp)
            vt[(bh * D + d0 + r) * Skp + j] = tile[threadIdx.x][r];
    }
}
