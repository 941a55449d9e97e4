// ex16_paged_decode_attention -- DRAFT reference solution (never run on a GPU; see ../README.md).
//
// Decode attention against a paged KV cache (vLLM's layout), split-K over the sequence
// (FlashDecoding) and grouped-query attention:
//   q (B, HQ, 128), k_cache / v_cache (NB, 16, HKV, 128) in T (float16 or bfloat16),
//   block_tables (B, MB) int32, context_lens (B) int32, o (B, HQ, 128) float32.
// Query head hq reads KV head hq / G, G = HQ / HKV (at most 16). Token i of sequence b lives in
// physical block block_tables[b][i / 16], slot i % 16. Scale 1 / sqrt(128).
//
// paged_decode: one CTA of 4 warps per (split s, KV head h, sequence b) = (blockIdx.x, .y, .z).
// The split covers logical blocks [s P, min((s + 1) P, nb)), nb = ceil(L / 16); warp w takes the
// split's blocks w, w + 4, ... Each warp runs its own 3-stage cp.async pipeline (16-byte copies,
// one K block and one V block of 4 KB each per stage, slots past L zero-filled and never read),
// so nothing in the main loop waits for another warp. All G query heads of the group are the 16
// rows of one mma.sync m16n8k16 A operand (rows >= G zero): S = Q K^T (fp32), online softmax in
// registers (exp2, the running max subtracted: scores of +-80 and more never overflow), P rounded
// to T as the A operand of O += P V (fp32). At the end the 4 warps merge through shared memory;
// a sequence with one split writes o directly, otherwise the split writes its normalised partial
// o and its log2-sum-exp, and paged_decode_combine merges the splits of each (b, hq).
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16"): lane = 4 g + t; A (16 x 16,
// row): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..); B (16 x 8, col):
// b0 (2t..2t+1, g), b1 (2t+8.., g); C (16 x 8): c0, c1 (g, 2t..2t+1), c2, c3 (g+8, 2t..2t+1).

#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define NEG_INF __int_as_float(0xff800000)

#define PD_D 128               // head dimension
#define PD_BS 16               // tokens per cache block
#define PD_WARPS 4
#define PD_THREADS (PD_WARPS * 32)
#define PD_STAGES 3
#define PD_ROW (PD_D + 8)      // shared row stride in halves: 272 B, ldmatrix conflict-free
#define PD_TILE (PD_BS * PD_ROW)
#define PD_SMEM_BYTES (PD_WARPS * PD_STAGES * 2 * PD_TILE * 2)   // 104448
#define PD_MAX_GROUP 16        // query heads per KV head: one m16 tile

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

__device__ __forceinline__ unsigned smem_addr(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, bypassing L1; valid == false copies nothing and zero-fills
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

// one block (16 tokens of KV head h) of K and of V into a stage; slots at or past ntok zero-filled
template <typename T>
__device__ __forceinline__ void load_block(T* sk, T* sv, const T* __restrict__ kc, const T* __restrict__ vc,
                                           int phys, int h, int hkv, int ntok, int lane)
{
    const size_t base = ((size_t)phys * PD_BS * hkv + h) * PD_D;     // token t at base + t * hkv * D
#pragma unroll
    for (int i = 0; i < PD_BS * PD_D / 8 / 32; ++i) {                 // 256 chunks of 16 B, 8 per lane
        const int c = i * 32 + lane, t = c >> 4, col = (c & 15) * 8;
        const size_t off = base + (size_t)t * hkv * PD_D + col;
        cp_async16(smem_addr(sk + t * PD_ROW + col), kc + off, t < ntok);
        cp_async16(smem_addr(sv + t * PD_ROW + col), vc + off, t < ntok);
    }
}

template <typename T>
__device__ void paged_decode(const T* __restrict__ q, const T* __restrict__ kc, const T* __restrict__ vc,
                             const int* __restrict__ block_tables, const int* __restrict__ context_lens,
                             float* __restrict__ o, float* __restrict__ part_o, float* __restrict__ part_lse,
                             int hq_total, int hkv, int mb, int p, float scale_log2)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const int s = blockIdx.x, h = blockIdx.y, b = blockIdx.z, nsplit = gridDim.x;
    const int L = context_lens[b];
    const int nb = (L + PD_BS - 1) / PD_BS;
    const int blk0 = s * p;
    if (blk0 >= nb) return;                         // this sequence is shorter: nothing to do
    const int blk1 = min(blk0 + p, nb);
    const int splits_b = (nb + p - 1) / p;          // active splits of this sequence
    const int G = hq_total / hkv;

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    T* stage0 = reinterpret_cast<T*>(smem) + warp * PD_STAGES * 2 * PD_TILE;
    const int* table = block_tables + (size_t)b * mb;

    // Q of the group as mma A fragments (rows g and g + 8 are query heads h G + row; rows >= G zero)
    unsigned qa[PD_D / 16][4];
    {
        const T* q0 = q + ((size_t)b * hq_total + (size_t)h * G + g) * PD_D;
        const T* q8 = q0 + 8 * PD_D;
#pragma unroll
        for (int kk = 0; kk < PD_D / 16; ++kk) {
            const int c = kk * 16 + 2 * t;
            qa[kk][0] = g < G ? *reinterpret_cast<const unsigned*>(q0 + c) : 0u;
            qa[kk][1] = g + 8 < G ? *reinterpret_cast<const unsigned*>(q8 + c) : 0u;
            qa[kk][2] = g < G ? *reinterpret_cast<const unsigned*>(q0 + c + 8) : 0u;
            qa[kk][3] = g + 8 < G ? *reinterpret_cast<const unsigned*>(q8 + c + 8) : 0u;
        }
    }

    // this warp's blocks: blk0 + warp + k * WARPS, k < nk; their table entries 32 at a time in
    // one register per lane (entry of block k in lane k % 32)
    const int cnt = blk1 - blk0;
    const int nk = cnt > warp ? (cnt - warp + PD_WARPS - 1) / PD_WARPS : 0;
    int phys_lane = 0;
    auto issue = [&](int k) {                       // start the copies of the warp's k-th block
        if ((k & 31) == 0) {
            const int kk = k + lane;
            phys_lane = kk < nk ? table[blk0 + warp + kk * PD_WARPS] : 0;
        }
        const int phys = __shfl_sync(0xffffffffu, phys_lane, k & 31);
        const int j = blk0 + warp + k * PD_WARPS;
        T* sk = stage0 + (k % PD_STAGES) * 2 * PD_TILE;
        load_block<T>(sk, sk + PD_TILE, kc, vc, phys, h, hkv, min(PD_BS, L - j * PD_BS), lane);
    };

    float acc[PD_D / 8][4];
#pragma unroll
    for (int j = 0; j < PD_D / 8; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
    float m0 = NEG_INF, m1 = NEG_INF, l0 = 0.f, l1 = 0.f;   // rows g and g + 8: running max, sum

#pragma unroll
    for (int k = 0; k < PD_STAGES - 1; ++k) {
        if (k < nk) issue(k);
        cp_async_commit();                          // one group per step, empty or not
    }
    for (int k = 0; k < nk; ++k) {
        if (k + PD_STAGES - 1 < nk) issue(k + PD_STAGES - 1);
        cp_async_commit();
        cp_async_wait<PD_STAGES - 1>();             // block k has landed (this lane's copies)...
        __syncwarp();                               // ...and every lane's
        const T* sk = stage0 + (k % PD_STAGES) * 2 * PD_TILE;
        const T* sv = sk + PD_TILE;
        const int ntok = min(PD_BS, L - (blk0 + warp + k * PD_WARPS) * PD_BS);

        float sc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
        for (int kk = 0; kk < PD_D / 16; ++kk) {
            unsigned r[4];
            ldmatrix_x4(r, smem_addr(sk + ((lane & 7) + (lane >> 4) * 8) * PD_ROW + kk * 16 + ((lane >> 3) & 1) * 8));
            Mma<T>::run(sc[0], qa[kk], r[0], r[1]);
            Mma<T>::run(sc[1], qa[kk], r[2], r[3]);
        }
        float mx0 = NEG_INF, mx1 = NEG_INF;
#pragma unroll
        for (int n = 0; n < 2; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int tok = n * 8 + 2 * t + (e & 1);
                sc[n][e] = tok < ntok ? sc[n][e] * scale_log2 : NEG_INF;
            }
#pragma unroll
        for (int n = 0; n < 2; ++n) {
            mx0 = fmaxf(mx0, fmaxf(sc[n][0], sc[n][1]));
            mx1 = fmaxf(mx1, fmaxf(sc[n][2], sc[n][3]));
        }
#pragma unroll
        for (int off = 1; off <= 2; off <<= 1) {
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, off));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, off));
        }
        const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);   // finite: token 0 of a block is valid
        const float a0 = exp2f(m0 - mn0), a1 = exp2f(m1 - mn1);   // exp2(-inf) = 0 on the first block
        m0 = mn0;
        m1 = mn1;
        float p[2][4];
#pragma unroll
        for (int n = 0; n < 2; ++n) {
            p[n][0] = exp2f(sc[n][0] - mn0);
            p[n][1] = exp2f(sc[n][1] - mn0);
            p[n][2] = exp2f(sc[n][2] - mn1);
            p[n][3] = exp2f(sc[n][3] - mn1);
        }
        l0 = l0 * a0 + (p[0][0] + p[0][1] + p[1][0] + p[1][1]);
        l1 = l1 * a1 + (p[0][2] + p[0][3] + p[1][2] + p[1][3]);
        const unsigned pa[4] = {Mma<T>::pack(p[0][0], p[0][1]), Mma<T>::pack(p[0][2], p[0][3]),
                                Mma<T>::pack(p[1][0], p[1][1]), Mma<T>::pack(p[1][2], p[1][3])};
#pragma unroll
        for (int j = 0; j < PD_D / 8; ++j) {
            acc[j][0] *= a0;
            acc[j][1] *= a0;
            acc[j][2] *= a1;
            acc[j][3] *= a1;
        }
#pragma unroll
        for (int jj = 0; jj < PD_D / 16; ++jj) {
            unsigned r[4];
            ldmatrix_x4_trans(r, smem_addr(sv + ((lane & 7) + ((lane >> 3) & 1) * 8) * PD_ROW + jj * 16 + (lane >> 4) * 8));
            Mma<T>::run(acc[2 * jj], pa, r[0], r[1]);
            Mma<T>::run(acc[2 * jj + 1], pa, r[2], r[3]);
        }
        __syncwarp();                               // every lane has read the stage before it is refilled
    }
    cp_async_wait<0>();
#pragma unroll
    for (int off = 1; off <= 2; off <<= 1) {        // the row sums over the quad
        l0 += __shfl_xor_sync(0xffffffffu, l0, off);
        l1 += __shfl_xor_sync(0xffffffffu, l1, off);
    }

    // merge the warps: O_w, m_w, l_w through shared memory (the pipeline's space, now free)
    __syncthreads();
    float* so = reinterpret_cast<float*>(smem);                        // [WARPS][16][D]
    float* sm = so + PD_WARPS * 16 * PD_D;                            // [WARPS][16]
    float* sl = sm + PD_WARPS * 16;                                   // [WARPS][16]
#pragma unroll
    for (int j = 0; j < PD_D / 8; ++j) {
        float* r0 = so + (warp * 16 + g) * PD_D + j * 8 + 2 * t;
        r0[0] = acc[j][0];
        r0[1] = acc[j][1];
        r0[8 * PD_D] = acc[j][2];
        r0[8 * PD_D + 1] = acc[j][3];
    }
    if (t == 0) {
        sm[warp * 16 + g] = m0;
        sm[warp * 16 + g + 8] = m1;
        sl[warp * 16 + g] = l0;
        sl[warp * 16 + g + 8] = l1;
    }
    __syncthreads();
    const int d = threadIdx.x;                                        // PD_THREADS == PD_D
    for (int r = 0; r < G; ++r) {
        float M = NEG_INF;
#pragma unroll
        for (int w = 0; w < PD_WARPS; ++w) M = fmaxf(M, sm[w * 16 + r]);     // warp 0 is finite
        float lsum = 0.f, osum = 0.f;
#pragma unroll
        for (int w = 0; w < PD_WARPS; ++w) {
            const float f = exp2f(sm[w * 16 + r] - M);                       // 0 for a warp with no block
            lsum += sl[w * 16 + r] * f;
            osum += so[(w * 16 + r) * PD_D + d] * f;
        }
        const size_t row = (size_t)b * hq_total + (size_t)h * G + r;
        if (splits_b == 1) {
            o[row * PD_D + d] = osum / lsum;
        } else {
            part_o[(row * nsplit + s) * PD_D + d] = osum / lsum;
            if (d == 0) part_lse[row * nsplit + s] = M + __log2f(lsum);
        }
    }
}

// o[b, hq] from the splits' partial outputs: weights 2^(lse_s - max lse), normalised
__device__ void paged_decode_combine_body(const int* __restrict__ context_lens, float* __restrict__ o,
                                          const float* __restrict__ part_o, const float* __restrict__ part_lse,
                                          int hq_total, int nsplit, int p)
{
    const int hq = blockIdx.x, b = blockIdx.y, d = threadIdx.x;
    const int nb = (context_lens[b] + PD_BS - 1) / PD_BS;
    const int splits_b = (nb + p - 1) / p;
    if (splits_b <= 1) return;                      // paged_decode wrote o itself
    const size_t row = (size_t)b * hq_total + hq;
    const float* lse = part_lse + row * nsplit;
    float M = NEG_INF;
    for (int i = 0; i < splits_b; ++i) M = fmaxf(M, lse[i]);
    float den = 0.f, num = 0.f;
    for (int i = 0; i < splits_b; ++i) {
        const float w = exp2f(lse[i] - M);
        den += w;
        num += w * part_o[(row * nsplit + i) * PD_D + d];
    }
    o[row * PD_D + d] = num / den;
}

#define PAGED(NAME, T)                                                                                      \
    extern "C" __global__ void __launch_bounds__(PD_THREADS, 2)                                            \
    NAME(const T* q, const T* kc, const T* vc, const int* bt, const int* cl, float* o, float* po, float* pl, \
         int hq, int hkv, int mb, int p, float scale_log2)                                                  \
    {                                                                                                       \
        paged_decode<T>(q, kc, vc, bt, cl, o, po, pl, hq, hkv, mb, p, scale_log2);                         \
    }
PAGED(paged_decode_f16, __half)
PAGED(paged_decode_bf16, __nv_bfloat16)

extern "C" __global__ void __launch_bounds__(PD_D)
paged_decode_combine(const int* cl, float* o, const float* po, const float* pl, int hq, int nsplit, int p)
{
    paged_decode_combine_body(cl, o, po, pl, hq, nsplit, p);
}
