// ex14_flash_attention -- reference solution: FlashAttention-2's forward pass (Dao 2023, arXiv
// 2307.08691): 16 query rows per warp and m-tile, S and P in registers, online softmax in the log2
// domain (running max subtracted, so scores of +-80 never overflow), P reused as the A operand of
// O += P V, LSE written at the end.
//
//   * ldmatrix: K fragments with ldmatrix.x4 (two 8-key n-tiles x 16 dims per instruction), V
//     fragments with ldmatrix.x4.trans (V is [key][dim] in shared memory; .trans hands each lane
//     the two keys 2t, 2t+1 of dim g that the mma's "col" B operand wants), Q fragments with
//     ldmatrix.x4.
//   * cp.async double buffering: K and V tiles j+1 are copied (16-byte cp.async.cg, zero-filled
//     past Sk) into the second buffer while tile j is computed, in separate commit groups, so
//     S = Q K_j^T starts as soon as K_j has landed, while V_j may still be in flight; two barriers
//     per key tile.
//   * MT m-tiles per warp (FlashAttention-2: 4 warps x 2 m-tiles of 16 rows, BM = 128), so each
//     K and V fragment loaded from shared memory feeds MT mma.
//   * The scale folded into one FFMA per score and 2^x by ex2.approx.ftz (what nvcc's
//     --use_fast_math gives FlashAttention-2); masking only where a tile can hold a masked key;
//     the query tile is the grid's slow index and causal CTAs run longest rows first.
//
// Measured on the H200 (benchmarks/RESULTS.md, twenty-second session; ex14_vs_sdpa.py, side by
// side with torch SDPA, whichever backend PyTorch picks): 4 warps x 2 m-tiles reaches
// 0.50-0.55x SDPA at batch 4, heads 16, seq 4096 (d 128, causal and not, d 64), up from 0.24-0.35x
// for the first reference (32-bit shared loads of K, V fragments from four 16-bit loads,
// synchronous tile loads, one m-tile per warp). The bar is 0.65x; FlashAttention-2 itself reaches
// ~330-370 TFLOP/s on an H100 (the paper's figure "Attention forward speed on H100"), ours ~310.
// What is left is Hopper's: wgmma from shared memory and TMA loads (FlashAttention-3).
//
// Layout: one CTA of WARPS warps per BM = 16 * WARPS * MT query rows of one (batch, head); shared
// memory Q (BM x ROW), K[2] and V[2] (BN x ROW each), ROW = D + 8 halves (a row stride of 16 mod
// 128 bytes: the 8 rows an ldmatrix phase reads fall in 8 different 16-byte bank groups).
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16" and "ldmatrix"): lane = 4 g + t;
// A (16 x 16, row): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..); B (16 x 8,
// col): b0 (k 2t..2t+1, n g), b1 (k 2t+8.., n g); C (16 x 8): c0, c1 (g, 2t..2t+1), c2, c3 (g+8, ..).
// ldmatrix.x4: lanes 8i..8i+7 give the row addresses of matrix i; lane l receives, of matrix i,
// row l/4, elements 2(l%4), 2(l%4)+1 (with .trans: rows 2(l%4), 2(l%4)+1 of column l/4).

#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define FA_NEG_INF __int_as_float(0xff800000)   // -inf (NVRTC has no math.h INFINITY)
#define FA_BN 64                                 // keys per tile
#define FA_PAD 8                                 // halves of padding per shared row

template <typename T> struct FaMma;
template <> struct FaMma<__half> {
    static __device__ __forceinline__ void run(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
    {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
    static __device__ __forceinline__ unsigned pack(float lo, float hi)
    {
        __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<unsigned*>(&h);
    }
};
template <> struct FaMma<__nv_bfloat16> {
    static __device__ __forceinline__ void run(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
    {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
    static __device__ __forceinline__ unsigned pack(float lo, float hi)
    {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<unsigned*>(&h);
    }
};

__device__ __forceinline__ unsigned fa_smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void fa_ldsm_x4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
__device__ __forceinline__ void fa_ldsm_x4_t(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
// 16 bytes global -> shared, bypassing L1; valid == false reads nothing and zero-fills
__device__ __forceinline__ void fa_cp_async16(unsigned dst, const void* src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(valid ? 16 : 0) : "memory");
}
__device__ __forceinline__ void fa_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void fa_cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}

// rows [row0, row0 + ROWS) of a (rows x D) matrix into shared memory at dst (row stride D + PAD
// halves), 16 bytes per cp.async; rows at or past `rows` are zero-filled (their source address is
// clamped to row 0, which exists, and nothing is read from it)
template <typename T, int D, int ROWS, int THREADS>
__device__ __forceinline__ void fa_load_async(unsigned dst, const T* __restrict__ src, int row0, int rows)
{
    constexpr int CHUNKS = D / 8;
#pragma unroll
    for (int c = threadIdx.x; c < ROWS * CHUNKS; c += THREADS) {
        const int r = c / CHUNKS, col = (c % CHUNKS) * 8;
        const bool valid = row0 + r < rows;
        fa_cp_async16(dst + (unsigned)(r * (D + FA_PAD) + col) * 2u, src + (size_t)(valid ? row0 + r : 0) * D + col, valid);
    }
}

// 2^x, approximate (PTX ex2.approx.ftz.f32: relative error about 2^-22, subnormal results
// flushed to 0): FlashAttention-2 gets the same instruction from nvcc's --use_fast_math; exp2f
// without it adds a range check around MUFU.EX2.
__device__ __forceinline__ float fa_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// MT m-tiles of 16 query rows per warp: rows m0 + 16 * (WARPS * mt + warp) + (g, g + 8), mt < MT,
// so every K and V fragment a warp loads feeds MT mma (FlashAttention-2 uses 4 warps x 2 m-tiles
// for BM = 128).
template <typename T, int D, int WARPS, int MT, bool QREG>
__device__ __forceinline__ void flash_fwd2(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                           float* __restrict__ o, float* __restrict__ lse, int Sq, int Sk,
                                           int causal, float scale_log2)
{
    constexpr int BM = 16 * WARPS * MT, THREADS = 32 * WARPS, ROW = D + FA_PAD;
    constexpr unsigned KV_BYTES = FA_BN * ROW * 2;           // one K or V buffer
    extern __shared__ __align__(16) unsigned char fa_raw[];
    const unsigned sQ = fa_smem(fa_raw);
    const unsigned sK = sQ + BM * ROW * 2;                   // K[2]
    const unsigned sV = sK + 2 * KV_BYTES;                   // V[2]

    // grid (B * H, ceil(Sq / BM)): the query tile is the slow index, so with causal masking the
    // whole grid runs longest rows first
    const int mtile = causal ? (int)gridDim.y - 1 - (int)blockIdx.y : (int)blockIdx.y;
    const int bh = blockIdx.x, m0 = mtile * BM;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    q += (size_t)bh * Sq * D;
    k += (size_t)bh * Sk * D;
    v += (size_t)bh * Sk * D;
    o += (size_t)bh * Sq * D;
    lse += (size_t)bh * Sq;
    const int kv_end = causal ? min(Sk, m0 + BM) : Sk;
    const int n_tiles = (kv_end + FA_BN - 1) / FA_BN;        // >= 1: kv_end >= 1

    fa_load_async<T, D, BM, THREADS>(sQ, q, m0, Sq);
    fa_cp_async_commit();                                    // group: Q
    fa_load_async<T, D, FA_BN, THREADS>(sK, k, 0, Sk);
    fa_cp_async_commit();                                    // group: K_0
    fa_load_async<T, D, FA_BN, THREADS>(sV, v, 0, Sk);
    fa_cp_async_commit();                                    // group: V_0

    // ldmatrix.x4 row address offsets of this lane (halves): A-style (Q, and V with .trans):
    // row (lane & 7) + 8 * ((lane >> 3) & 1), column 8 * (lane >> 4); B-style (K): row
    // (lane & 7) + 8 * (lane >> 4), column 8 * ((lane >> 3) & 1).
    const int a_row = (lane & 7) + 8 * ((lane >> 3) & 1), a_col = 8 * (lane >> 4);
    const int b_row = (lane & 7) + 8 * (lane >> 4), b_col = 8 * ((lane >> 3) & 1);
    unsigned q_lane[MT];
    int qi[MT][2];                                           // this thread's query rows
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
        const int r = 16 * (WARPS * mt + warp);
        q_lane[mt] = sQ + (unsigned)((r + a_row) * ROW + a_col) * 2u;
        qi[mt][0] = m0 + r + g;
        qi[mt][1] = m0 + r + g + 8;
    }

    unsigned qa[QREG ? MT : 1][QREG ? D / 16 : 1][4];
    float acc[MT][D / 8][4];
    float m_run[MT][2], l_run[MT][2];                        // raw-score row max; this thread's share of the row sums
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int dt = 0; dt < D / 8; ++dt) acc[mt][dt][0] = acc[mt][dt][1] = acc[mt][dt][2] = acc[mt][dt][3] = 0.f;
        m_run[mt][0] = m_run[mt][1] = FA_NEG_INF;
        l_run[mt][0] = l_run[mt][1] = 0.f;
    }

    for (int j = 0; j < n_tiles; ++j) {
        const unsigned buf = (unsigned)(j & 1);
        const int n0 = j * FA_BN;
        const bool more = j + 1 < n_tiles;
        fa_cp_async_wait<1>();                               // K_j (and Q) landed; V_j may not have
        __syncthreads();                                     // ... for every thread; and every warp is done with tile j - 1
        if (more) {                                          // tile j + 1 into the buffers tile j - 1 used
            fa_load_async<T, D, FA_BN, THREADS>(sK + (buf ^ 1u) * KV_BYTES, k, n0 + FA_BN, Sk);
            fa_cp_async_commit();
            fa_load_async<T, D, FA_BN, THREADS>(sV + (buf ^ 1u) * KV_BYTES, v, n0 + FA_BN, Sk);
            fa_cp_async_commit();
        }
        if (QREG && j == 0) {
#pragma unroll
            for (int mt = 0; mt < (QREG ? MT : 0); ++mt)
#pragma unroll
                for (int kk = 0; kk < D / 16; ++kk)
                    fa_ldsm_x4(q_lane[mt] + kk * 32u, qa[QREG ? mt : 0][QREG ? kk : 0][0], qa[QREG ? mt : 0][QREG ? kk : 0][1],
                               qa[QREG ? mt : 0][QREG ? kk : 0][2], qa[QREG ? mt : 0][QREG ? kk : 0][3]);
        }

        // S = Q K_j^T (raw scores): 16 x 64 per m-tile, 8 n-tiles of 8 keys; each K fragment feeds MT mma
        float s[MT][FA_BN / 8][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < FA_BN / 8; ++nt) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.f;
        const unsigned k_lane = sK + buf * KV_BYTES + (unsigned)(b_row * ROW + b_col) * 2u;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            unsigned a[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                if (QREG) {
#pragma unroll
                    for (int e = 0; e < 4; ++e) a[mt][e] = qa[QREG ? mt : 0][QREG ? kk : 0][e];
                } else {
                    fa_ldsm_x4(q_lane[mt] + kk * 32u, a[mt][0], a[mt][1], a[mt][2], a[mt][3]);
                }
            }
#pragma unroll
            for (int np = 0; np < FA_BN / 16; ++np) {
                unsigned b0, b1, b2, b3;
                fa_ldsm_x4(k_lane + (unsigned)(np * 16 * ROW + kk * 16) * 2u, b0, b1, b2, b3);
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    FaMma<T>::run(s[mt][2 * np], a[mt], b0, b1);
                    FaMma<T>::run(s[mt][2 * np + 1], a[mt], b2, b3);
                }
            }
        }

        // mask where the tile can hold a masked key (past Sk, or above the diagonal of the CTA's
        // first row m0, the smallest of all its rows); online softmax in the log2 domain:
        // p = 2^(s * scale_log2 - m * scale_log2), one FFMA and one EX2 per score
        const bool need_mask = n0 + FA_BN > Sk || (causal && n0 + FA_BN - 1 > m0);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
            float tile_max[2] = {FA_NEG_INF, FA_NEG_INF};
#pragma unroll
            for (int nt = 0; nt < FA_BN / 8; ++nt) {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int row = e >> 1;
                    if (need_mask) {
                        const int key = n0 + nt * 8 + 2 * t + (e & 1);
                        if (key >= Sk || (causal && key > qi[mt][row])) s[mt][nt][e] = FA_NEG_INF;
                    }
                    tile_max[row] = fmaxf(tile_max[row], s[mt][nt][e]);
                }
            }
            float alpha[2];
#pragma unroll
            for (int row = 0; row < 2; ++row) {
                tile_max[row] = fmaxf(tile_max[row], __shfl_xor_sync(0xffffffffu, tile_max[row], 1));
                tile_max[row] = fmaxf(tile_max[row], __shfl_xor_sync(0xffffffffu, tile_max[row], 2));
                const float m_new = fmaxf(m_run[mt][row], tile_max[row]);
                // a row with nothing visible yet keeps m = -inf: 2^(-inf - 0) is 0, never NaN
                const float base = m_new == FA_NEG_INF ? 0.f : m_new * scale_log2;
                alpha[row] = fa_exp2(m_run[mt][row] * scale_log2 - base);
                m_run[mt][row] = m_new;
                l_run[mt][row] *= alpha[row];
#pragma unroll
                for (int nt = 0; nt < FA_BN / 8; ++nt) {
                    s[mt][nt][2 * row] = fa_exp2(fmaf(s[mt][nt][2 * row], scale_log2, -base));
                    s[mt][nt][2 * row + 1] = fa_exp2(fmaf(s[mt][nt][2 * row + 1], scale_log2, -base));
                    l_run[mt][row] += s[mt][nt][2 * row] + s[mt][nt][2 * row + 1];
                }
            }
#pragma unroll
            for (int dt = 0; dt < D / 8; ++dt) {
                acc[mt][dt][0] *= alpha[0];
                acc[mt][dt][1] *= alpha[0];
                acc[mt][dt][2] *= alpha[1];
                acc[mt][dt][3] *= alpha[1];
            }
        }

        if (more)
            fa_cp_async_wait<2>();                           // V_j landed (K_j+1, V_j+1 may not have)
        else
            fa_cp_async_wait<0>();
        __syncthreads();

        // O += P V_j, 16 keys at a time; V fragments of two 8-dim tiles per ldmatrix.x4.trans, each
        // feeding MT mma
        const unsigned v_lane = sV + buf * KV_BYTES + (unsigned)(a_row * ROW + a_col) * 2u;
#pragma unroll
        for (int kc = 0; kc < FA_BN / 16; ++kc) {
            unsigned pa[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                pa[mt][0] = FaMma<T>::pack(s[mt][2 * kc][0], s[mt][2 * kc][1]);
                pa[mt][1] = FaMma<T>::pack(s[mt][2 * kc][2], s[mt][2 * kc][3]);
                pa[mt][2] = FaMma<T>::pack(s[mt][2 * kc + 1][0], s[mt][2 * kc + 1][1]);
                pa[mt][3] = FaMma<T>::pack(s[mt][2 * kc + 1][2], s[mt][2 * kc + 1][3]);
            }
#pragma unroll
            for (int dp = 0; dp < D / 16; ++dp) {
                unsigned b0, b1, b2, b3;
                fa_ldsm_x4_t(v_lane + (unsigned)(kc * 16 * ROW + dp * 16) * 2u, b0, b1, b2, b3);
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    FaMma<T>::run(acc[mt][2 * dp], pa[mt], b0, b1);
                    FaMma<T>::run(acc[mt][2 * dp + 1], pa[mt], b2, b3);
                }
            }
        }
        // no barrier here: the next iteration's first barrier comes before anything overwrites
        // this tile's buffers (the loads of tile j + 2 are issued after it)
    }

#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int row = 0; row < 2; ++row) {
            float l = l_run[mt][row];
            l += __shfl_xor_sync(0xffffffffu, l, 1);
            l += __shfl_xor_sync(0xffffffffu, l, 2);
            const float inv = 1.f / l;
            if (qi[mt][row] < Sq) {
                float* orow = o + (size_t)qi[mt][row] * D;
#pragma unroll
                for (int dt = 0; dt < D / 8; ++dt)
                    *reinterpret_cast<float2*>(orow + dt * 8 + 2 * t) =
                        make_float2(acc[mt][dt][2 * row] * inv, acc[mt][dt][2 * row + 1] * inv);
                if (t == 0) lse[qi[mt][row]] = (m_run[mt][row] * scale_log2 + log2f(l)) * 0.69314718055994531f;
            }
        }
    }
}

// flash2_{f16,bf16}_d{D}_w{WARPS}_m{MT}[_qs]: WARPS warps of MT m-tiles (BM = 16 WARPS MT query
// rows) per CTA; _qs: Q fragments re-read from shared memory every key tile instead of kept in
// registers. Launch: grid (B * H, ceil(Sq / BM)), 32 WARPS threads, dynamic shared memory
// (BM + 4 * 64) * (D + 8) * 2 bytes.
#define FLASH2(NAME, T, D, WARPS, MT, QREG)                                                             \
    extern "C" __global__ void __launch_bounds__(WARPS * 32)                                           \
    NAME(const T* q, const T* k, const T* v, float* o, float* lse, int Sq, int Sk, int causal, float s) \
    {                                                                                                   \
        flash_fwd2<T, D, WARPS, MT, QREG>(q, k, v, o, lse, Sq, Sk, causal, s);                          \
    }
#define FLASH2_BOTH(D, WARPS, MT, QREG, SUFFIX)                                                 \
    FLASH2(flash2_f16_d##D##_w##WARPS##_m##MT##SUFFIX, __half, D, WARPS, MT, QREG)              \
    FLASH2(flash2_bf16_d##D##_w##WARPS##_m##MT##SUFFIX, __nv_bfloat16, D, WARPS, MT, QREG)
#define FLASH2_ALL(D)                   \
    FLASH2_BOTH(D, 4, 2, false, _qs)    \
    FLASH2_BOTH(D, 4, 1, true, )        \
    FLASH2_BOTH(D, 8, 2, false, _qs)
FLASH2_ALL(64)
FLASH2_ALL(128)
