// ex17_flash_attention_hopper -- student template (stub). Read exercises/ex17_flash_attention_hopper/
// README.md first. Given: the mbarrier and TMA wrappers, the wgmma descriptor (128-byte swizzle,
// K-major, as ex13's), the two wgmma shapes this kernel needs (S = Q K^T from shared memory, O += P V
// with P from registers), the fences, P's packing to the inputs' type, exp2, the V transpose and the
// launch interface. Yours: the body of fa3_body (the TODO below, hints in the README).
//
// O = softmax(Q K^T / sqrt(D) + mask) V and lse = log(sum_j exp(s_ij)) per query row, q, k, v
// float16 or bfloat16 (T), o and lse float32, D 64 or 128; causal = 1: query i sees keys j <= i.
//
// Needs sm_90a (wgmma, setmaxnreg): compiled for anything else, the kernels only trap (the body is
// under __CUDA_ARCH_FEAT_SM90_ALL, so tests/test_nvcc.py can still build this file for sm_80-sm_90).
//
// Fixed by the launch code (solution.py) and the constants below:
//   one CTA per 128 query rows (F3_BM) of one (batch, head): grid (B * H, ceil(Sq / 128)), 384
//   threads = 3 warpgroups: warpgroup 0 the producer (one thread issues the TMA loads), warpgroups 1
//   and 2 the consumers (consumer c owns query rows 64c .. 64c + 63 of the CTA's 128). Key tiles of
//   128 (F3_BN). blockIdx.x is the (batch, head) and varies fastest in the order CTAs start;
//   blockIdx.y the query tile: with causal = 1 take them in reverse (mtile = gridDim.y - 1 -
//   blockIdx.y: the longest rows of every head first), as ex14's reference does.
//   Dynamic shared memory F3_SMEM(D): 1024 bytes of slack (align the base to 1024 for
//   the swizzle atoms), the Q tile, F3_STAGES x (K tile, V^T tile), then 8-byte mbarriers.
//   Tensor maps, all with 128-byte swizzle, the tensors seen as 3-D (B*H, rows, columns) so that a
//   box never crosses into the next head and rows past the end read as zeros (they still count in
//   the transaction bytes):
//     tq: q as (B*H, Sq, D), box (1, 128, 64): a Q tile is D / 64 boxes of 128 rows x 64 columns;
//     tk: k as (B*H, Sk, D), box (1, 128, 64): a K tile likewise;
//     tv: V^T as (B*H, D, Skp), box (1, D, 64): solution.py transposes V first (fa3_transpose_v
//         below; Skp = Sk rounded up to 8, zeros past Sk), so that V^T's rows are K-major for the
//         P V wgmma, whose descriptor is then the same as K's. A V^T tile is 2 boxes of D x 64 keys.
//
// References (PTX ISA 8.x): "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions"
// (wgmma.mma_async, its descriptor and register fragments: see the layouts below); "cp.async.bulk.
// tensor" (the TMA); "mbarrier"; "setmaxnreg". FlashAttention-3 (Shah et al., 2024) for the design.
//
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
// bytes of one Q, K or V^T tile (128 x D halves = 256 D bytes) and the dynamic shared memory:
// 1024 of slack to align the base to 1024 (swizzle atoms), Q, STAGES x (K, V^T), then 128 bytes
// for up to 16 mbarriers (= _smem in solution.py; change F3_STAGES and _STAGES together: 3 stages
// at D = 128 take 230,528 bytes of the 232,448 a block may have)
#define F3_TILE(D) (256 * (D))
#define F3_SMEM(D) (1024 + F3_TILE(D) * (1 + 2 * F3_STAGES) + 128)

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
__device__ __forceinline__ void f3_wg_wait1() { asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory"); }
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


// issue S = Q K^T for consumer c's 64 rows (64 x 128, fp32) from shared memory: Q box kk / 4 at
// rows 64c, +32 bytes per k-step of 16; K box kk / 4 of the stage at sK_stage (given: the
// descriptor arithmetic of the 128-byte swizzled boxes is the same as ex13's)
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
// issue O += P V: P (32 registers: 8 k-steps of 4, wgmma's A-register layout, see the header) from
// registers, V^T box kk / 4 (keys 64 (kk / 4) ..) of the stage at sV_stage, +32 bytes per k-step
template <typename T, int D>
__device__ __forceinline__ void f3_issue_pv(float (&acc)[D / 2], const unsigned (&pa)[32], unsigned sV_stage)
{
    constexpr unsigned VBOX = D * 128;
#pragma unroll
    for (int kk = 0; kk < F3_BN / 16; ++kk)
        F3Type<T>::pv(acc, pa + 4 * kk, f3_desc(sV_stage + (kk / 4) * VBOX + (kk % 4) * 32));
}

template <typename T, int D>
__device__ __forceinline__ void fa3_body(const TmaDesc* tq, const TmaDesc* tk, const TmaDesc* tv, float* __restrict__ o,
                                         float* __restrict__ lse, int Sq, int Sk, int causal, float scale_log2)
{
    extern __shared__ unsigned char f3_raw[];
    const unsigned base = (f3_smem(f3_raw) + 1023u) & ~1023u;     // 1024-aligned: swizzle atoms
    const unsigned sQ = base, sK = sQ + F3_TILE(D), sV = sK + F3_STAGES * F3_TILE(D);
    const unsigned bars = sV + F3_STAGES * F3_TILE(D);              // room for 16 mbarriers
    (void)tq; (void)tk; (void)tv; (void)o; (void)lse; (void)Sq; (void)Sk; (void)causal; (void)scale_log2;
    (void)sQ; (void)sK; (void)sV; (void)bars;

    // TODO: FlashAttention on Hopper (README.md, hints in order). Until then nothing is written.
    //   1. Thread 0 initialises the barriers (Q full, and per stage: K full, V full, empty with one
    //      arrival per consumer warp), then fence.mbarrier_init and __syncthreads().
    //   2. Warpgroup 0 (producer): setmaxnreg.dec 40; one thread loads the Q tile once (D / 64 boxes
    //      at (64 h, m0, bh)), then for each key tile j (causal: only up to the diagonal): wait the
    //      stage's empty barrier (parity phase ^ 1), expect_tx + the K boxes at (64 h, 128 j, bh),
    //      expect_tx + the two V^T boxes at (128 j + 64 h, 0, bh). Then it returns.
    //   3. Consumers: setmaxnreg.inc 232; per key tile j (stage j % F3_STAGES, parity
    //      (j / F3_STAGES) & 1): wait K full, f3_pin(sc) + f3_wg_fence, issue S = Q K^T
    //      (f3_issue_qk), commit, wait, f3_pin(sc); mask (keys >= Sk; causal: key > row); online
    //      softmax in the log2 domain, keeping the running max m of the raw scores: P = f3_exp2(s
    //      scale_log2 - m scale_log2), running max and sum per row shared by the 4 lanes of a quad
    //      (__shfl_xor_sync 1 and 2); rescale O and l by f3_exp2((m_old - m_new) scale_log2); pack P to
    //      T in the A-register layout (F3Type<T>::pack per pair, the header's mapping); wait V full;
    //      f3_pin(acc), f3_pin(pa), f3_wg_fence, issue O += P V (f3_issue_pv), commit, wait, pin both
    //      again; lane 0 of each warp arrives on the stage's empty barrier.
    //   4. Epilogue: O / l (the quad's sum) to o as float2 pairs, lse = (m scale_log2 + log2 l) ln 2,
    //      rows >= Sq skipped.
    //   5. Then, for speed (README.md, hint 6): overlap the softmax of tile j with the P V of tile
    //      j - 1 (f3_wg_wait1), with 3 stages (F3_STAGES here and _STAGES in solution.py); and
    //      float16's subnormal weights (README.md, hint 7).
}

#define F3_BODY(T, D) fa3_body<T, D>(&tq, &tk, &tv, o, lse, Sq, Sk, causal, scale_log2)
#else
#define F3_BODY(T, D) __trap()   // not sm_90a: wgmma, setmaxnreg and this kernel do not exist
#endif

// fa3_{f16,bf16}_d{64,128}: launched by solution.py with grid (B * H, ceil(Sq / 128)), 384 threads and
// F3_SMEM(D) bytes of dynamic shared memory; scale_log2 = log2(e) / sqrt(D).
#define F3_KERNEL(NAME, T, D)                                                                             \
    extern "C" __global__ void __launch_bounds__(F3_THREADS, 1)                                           \
    NAME(const __grid_constant__ TmaDesc tq, const __grid_constant__ TmaDesc tk,                          \
         const __grid_constant__ TmaDesc tv, float* o, float* lse, int Sq, int Sk, int causal, float scale_log2) \
    {                                                                                                     \
        F3_BODY(T, D);                                                                                    \
    }
F3_KERNEL(fa3_f16_d64, __half, 64)
F3_KERNEL(fa3_f16_d128, __half, 128)
F3_KERNEL(fa3_bf16_d64, __nv_bfloat16, 64)
F3_KERNEL(fa3_bf16_d128, __nv_bfloat16, 128)

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
