// ex14_flash_attention -- reference solution: FlashAttention-2's forward pass on mma.sync.
//
// One CTA of 4 warps per 64 query rows of one (batch, head); each warp owns 16 rows. Q's tile is
// loaded once into shared memory and kept in registers as mma A fragments; K and V go through
// shared memory 64 keys at a time. Per key tile: S = Q K^T (m16n8k16, fp32 accumulators), the
// scale and log2(e) folded in, masked (keys past Sk; causal: key > query), then the online softmax
// in registers: the running row max m, P = exp2(S - m), the running sum l (per thread, summed over
// the quad at the end) and O rescaled by exp2(m_old - m_new); P is rounded to the input type and
// reused, register to register, as the A operand of O += P V. Causal: key tiles past the CTA's
// last query are never loaded. At the end O /= l, and lse = (m + log2 l) ln 2.
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16"): lane = 4 g + t; A (16 x 16,
// row): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..); B (16 x 8, col):
// b0 (2t..2t+1, g), b1 (2t+8.., g); C (16 x 8): c0, c1 (g, 2t..2t+1), c2, c3 (g+8, 2t..2t+1).

#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define NEG_INF __int_as_float(0xff800000)   // -inf (NVRTC has no math.h INFINITY)

#define BM 64                 // query rows per CTA (16 per warp)
#define BN 64                 // keys per tile
#define WARPS 4
#define PAD 8                 // halves of padding per shared row (row stride = 4 banks mod 32)

template <typename T> struct Mma;
template <> struct Mma<__half> {
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
template <> struct Mma<__nv_bfloat16> {
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

// rows [row0, row0 + BM) of a (rows x D) matrix into shared memory (row stride D + PAD), 16 bytes
// at a time; rows at or past `rows` are zero
template <typename T, int D>
__device__ __forceinline__ void load_tile(T* __restrict__ dst, const T* __restrict__ src, int row0, int rows)
{
    constexpr int CHUNKS = D / 8;                       // 16-byte chunks per row
    for (int c = threadIdx.x; c < BM * CHUNKS; c += WARPS * 32) {
        const int r = c / CHUNKS, col = (c % CHUNKS) * 8;
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if (row0 + r < rows) v = *reinterpret_cast<const uint4*>(src + (size_t)(row0 + r) * D + col);
        *reinterpret_cast<uint4*>(dst + r * (D + PAD) + col) = v;
    }
}

__device__ __forceinline__ unsigned u32_at(const void* p) { return *reinterpret_cast<const unsigned*>(p); }

template <typename T>
__device__ __forceinline__ unsigned pair(const T* lo, const T* hi)   // two halves from two rows
{
    const unsigned short a = *reinterpret_cast<const unsigned short*>(lo);
    const unsigned short b = *reinterpret_cast<const unsigned short*>(hi);
    return (unsigned)a | ((unsigned)b << 16);
}

template <typename T, int D>
__device__ void flash_fwd(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                          float* __restrict__ o, float* __restrict__ lse, int Sq, int Sk, int causal, float scale_log2)
{
    extern __shared__ __align__(16) unsigned char smem[];
    T* Qs = reinterpret_cast<T*>(smem);
    T* Ks = Qs + BM * (D + PAD);
    T* Vs = Ks + BN * (D + PAD);

    const int bh = blockIdx.y, m0 = blockIdx.x * BM;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    q += (size_t)bh * Sq * D;
    k += (size_t)bh * Sk * D;
    v += (size_t)bh * Sk * D;
    o += (size_t)bh * Sq * D;
    lse += (size_t)bh * Sq;

    load_tile<T, D>(Qs, q, m0, Sq);
    __syncthreads();
    const int r0 = warp * 16 + g;                     // this thread's rows in the tile: r0, r0 + 8
    unsigned qa[D / 16][4];
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
        const int c = kk * 16 + 2 * t;
        qa[kk][0] = u32_at(Qs + r0 * (D + PAD) + c);
        qa[kk][1] = u32_at(Qs + (r0 + 8) * (D + PAD) + c);
        qa[kk][2] = u32_at(Qs + r0 * (D + PAD) + c + 8);
        qa[kk][3] = u32_at(Qs + (r0 + 8) * (D + PAD) + c + 8);
    }

    float acc[D / 8][4];                               // O, 16 x D per warp: D / 8 tiles of 16 x 8
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) acc[dt][0] = acc[dt][1] = acc[dt][2] = acc[dt][3] = 0.f;
    float m_run[2] = {NEG_INF, NEG_INF};           // rows r0 and r0 + 8, log2 domain
    float l_run[2] = {0.f, 0.f};                       // this thread's share of the row sums
    const int qi[2] = {m0 + r0, m0 + r0 + 8};
    const int kv_end = causal ? min(Sk, m0 + BM) : Sk;

    for (int n0 = 0; n0 < kv_end; n0 += BN) {
        __syncthreads();                               // the previous tile is no longer read
        load_tile<T, D>(Ks, k, n0, Sk);
        load_tile<T, D>(Vs, v, n0, Sk);
        __syncthreads();

        float s[BN / 8][4];
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
            for (int nt = 0; nt < BN / 8; ++nt) {
                const T* row = Ks + (nt * 8 + g) * (D + PAD) + kk * 16 + 2 * t;
                Mma<T>::run(s[nt], qa[kk], u32_at(row), u32_at(row + 8));
            }
        }

        float tile_max[2] = {NEG_INF, NEG_INF};
#pragma unroll
        for (int nt = 0; nt < BN / 8; ++nt) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int key = n0 + nt * 8 + 2 * t + (e & 1), row = e >> 1;
                const bool masked = key >= Sk || (causal && key > qi[row]);
                s[nt][e] = masked ? NEG_INF : s[nt][e] * scale_log2;
                tile_max[row] = fmaxf(tile_max[row], s[nt][e]);
            }
        }
        float alpha[2];
#pragma unroll
        for (int row = 0; row < 2; ++row) {
            tile_max[row] = fmaxf(tile_max[row], __shfl_xor_sync(0xffffffffu, tile_max[row], 1));
            tile_max[row] = fmaxf(tile_max[row], __shfl_xor_sync(0xffffffffu, tile_max[row], 2));
            const float m_new = fmaxf(m_run[row], tile_max[row]);
            // a row with nothing visible yet keeps m = -inf: exp2 of (-inf) - 0 is 0, never NaN
            const float base = m_new == NEG_INF ? 0.f : m_new;
            alpha[row] = exp2f(m_run[row] - base);
            m_run[row] = m_new;
            l_run[row] *= alpha[row];
#pragma unroll
            for (int nt = 0; nt < BN / 8; ++nt) {
                s[nt][2 * row] = exp2f(s[nt][2 * row] - base);
                s[nt][2 * row + 1] = exp2f(s[nt][2 * row + 1] - base);
                l_run[row] += s[nt][2 * row] + s[nt][2 * row + 1];
            }
        }
#pragma unroll
        for (int dt = 0; dt < D / 8; ++dt) {
            acc[dt][0] *= alpha[0];
            acc[dt][1] *= alpha[0];
            acc[dt][2] *= alpha[1];
            acc[dt][3] *= alpha[1];
        }

#pragma unroll
        for (int kc = 0; kc < BN / 16; ++kc) {         // O += P V, 16 keys at a time
            unsigned pa[4];
            pa[0] = Mma<T>::pack(s[2 * kc][0], s[2 * kc][1]);
            pa[1] = Mma<T>::pack(s[2 * kc][2], s[2 * kc][3]);
            pa[2] = Mma<T>::pack(s[2 * kc + 1][0], s[2 * kc + 1][1]);
            pa[3] = Mma<T>::pack(s[2 * kc + 1][2], s[2 * kc + 1][3]);
            const T* vrow = Vs + (kc * 16 + 2 * t) * (D + PAD) + g;
#pragma unroll
            for (int dt = 0; dt < D / 8; ++dt) {
                const T* p = vrow + dt * 8;
                Mma<T>::run(acc[dt], pa, pair(p, p + (D + PAD)), pair(p + 8 * (D + PAD), p + 9 * (D + PAD)));
            }
        }
    }

#pragma unroll
    for (int row = 0; row < 2; ++row) {
        float l = l_run[row];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const float inv = 1.f / l;
        if (qi[row] < Sq) {
            float* orow = o + (size_t)qi[row] * D;
#pragma unroll
            for (int dt = 0; dt < D / 8; ++dt)
                *reinterpret_cast<float2*>(orow + dt * 8 + 2 * t) =
                    make_float2(acc[dt][2 * row] * inv, acc[dt][2 * row + 1] * inv);
            if (t == 0) lse[qi[row]] = (m_run[row] + log2f(l)) * 0.69314718055994531f;
        }
    }
}

#define FLASH(NAME, T, D)                                                                              \
    extern "C" __global__ void __launch_bounds__(WARPS * 32)                                          \
    NAME(const T* q, const T* k, const T* v, float* o, float* lse, int Sq, int Sk, int causal, float s) \
    {                                                                                                  \
        flash_fwd<T, D>(q, k, v, o, lse, Sq, Sk, causal, s);                                           \
    }
FLASH(flash_fwd_f16_d64, __half, 64)
FLASH(flash_fwd_f16_d128, __half, 128)
FLASH(flash_fwd_bf16_d64, __nv_bfloat16, 64)
FLASH(flash_fwd_bf16_d128, __nv_bfloat16, 128)
