// ex16_paged_decode_attention -- your kernels. Read the exercise README first.
//
// Decode attention against a paged KV cache (vLLM's layout), split-K over the sequence
// (FlashDecoding) and grouped-query attention:
//   q (B, HQ, 128), k_cache / v_cache (NB, 16, HKV, 128) in T (float16 or bfloat16),
//   block_tables (B, MB) int32, context_lens (B) int32, o (B, HQ, 128) float32.
// Query head hq reads KV head hq / G, G = HQ / HKV (at most 16). Token i of sequence b lives in
// physical block block_tables[b][i / 16], slot i % 16. Scale 1 / sqrt(128).
//
// solution.py (complete) launches paged_decode_<f16|bf16> on a (S, HKV, B) grid of 128 threads with
// PD_SMEM_BYTES of dynamic shared memory, and, when S > 1, paged_decode_combine on (HQ, B) x 256
// threads (PD_COMBINE_WARPS warps). Split s of sequence b covers its logical blocks
// [s p, min((s + 1) p, nb)), nb = ceil(L / 16);
// a sequence with a single split (nb <= p) writes o itself, otherwise each split writes its partial o
// (part_o[b][hq][s][:]) and its log2-sum-exp (part_lse[b][hq][s]) and the combine merges them. Yours
// to write: the loads (16 bytes at a time; never follow a table entry past nb, never let a slot past
// L into the result), Q K^T and P V for all G query heads of the group (the mma.sync wrapper and
// ldmatrix are given; CUDA cores work too), the online softmax, the merges. Until then nothing is written.

// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16"): lane = 4 g + t; A (16 x 16,
// row): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..); B (16 x 8, col):
// b0 (2t..2t+1, g), b1 (2t+8.., g); C (16 x 8): c0, c1 (g, 2t..2t+1), c2, c3 (g+8, 2t..2t+1).

#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define NEG_INF __int_as_float(0xff800000)

#define PD_D 128               // head dimension
#define PD_BS 16               // tokens per cache block
#define PD_WARPS 4
#define PD_COMBINE_WARPS 8     // warps per paged_decode_combine CTA (solution.py's _COMBINE_THREADS / 32)
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
    // scale_log2 = log2(e) / sqrt(128): scores times scale_log2 go straight into exp2f.
    // TODO: the split's attention (see the comment at the top).
}

__device__ void paged_decode_combine_body(const int* __restrict__ context_lens, float* __restrict__ o,
                                          const float* __restrict__ part_o, const float* __restrict__ part_lse,
                                          int hq_total, int nsplit, int p)
{
    // TODO: o[b][hq] from the splits' partials, weighted by 2^(lse_s - max lse). The CTA has
    // PD_COMBINE_WARPS warps: spread the splits over them (a single thread walking every split
    // spends one dependent L2 round trip per split: 33 of them with the given plan at batch 1,
    // 131072 tokens, 256 with 512-token splits).
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

extern "C" __global__ void __launch_bounds__(PD_COMBINE_WARPS * 32)
paged_decode_combine(const int* cl, float* o, const float* po, const float* pl, int hq, int nsplit, int p)
{
    paged_decode_combine_body(cl, o, po, pl, hq, nsplit, p);
}
