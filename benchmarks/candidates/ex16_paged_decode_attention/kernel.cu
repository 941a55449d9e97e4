// ex16_paged_decode_attention candidate (benchmarks only, not the reference yet): a combine pass
// that reads the splits in parallel. The attention kernel itself is the reference's
// (solutions/ex16_paged_decode_attention/kernel.cu, paged_decode_{f16,bf16}); solution.py loads it
// from there.
//
// Why: at batch 1, context 131072 the reference reaches 0.71x of the copy bandwidth over the KV
// bytes (benchmarks/RESULTS.md, eighteenth session; bar 0.80). Its plan cuts each (sequence, KV
// head) into S = 256 splits, and its combine runs one CTA of 128 threads per (sequence, query
// head), each thread walking all 256 splits one after the other: 32 CTAs on 132 SMs and 256
// dependent rounds of L2 latency, a few tens of microseconds of a 192 us call.
//
// paged_decode_combine_par: one CTA of CB_WARPS warps per (query head, sequence) = (blockIdx.x,
// blockIdx.y). The CTA first reduces the splits' log2-sum-exps to their maximum M, then warp w
// takes splits w, w + CB_WARPS, ..., lane l the four dims 4l..4l+3 of each split's partial o
// (one coalesced 512-byte row per warp and split), summing 2^(lse_s - M) * o_s and 2^(lse_s - M);
// the warps' sums meet in shared memory and warp 0 writes o = num / den. Same contract as the
// reference's paged_decode_combine: a sequence with one split was written by paged_decode itself.

#define CB_D 128
#define CB_BS 16
#define CB_WARPS 8
#define CB_NEG_INF __int_as_float(0xff800000)

extern "C" __global__ void __launch_bounds__(CB_WARPS * 32)
paged_decode_combine_par(const int* __restrict__ context_lens, float* __restrict__ o,
                         const float* __restrict__ part_o, const float* __restrict__ part_lse,
                         int hq_total, int nsplit, int p)
{
    __shared__ float s_max[CB_WARPS];
    __shared__ float4 s_num[CB_WARPS][32];
    __shared__ float s_den[CB_WARPS];
    const int hq = blockIdx.x, b = blockIdx.y;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int nb = (context_lens[b] + CB_BS - 1) / CB_BS;
    const int splits_b = (nb + p - 1) / p;
    if (splits_b <= 1) return;                       // paged_decode wrote o itself
    const size_t row = (size_t)b * hq_total + hq;
    const float* lse = part_lse + row * nsplit;

    float m = CB_NEG_INF;
    for (int i = threadIdx.x; i < splits_b; i += CB_WARPS * 32) m = fmaxf(m, lse[i]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (lane == 0) s_max[warp] = m;
    __syncthreads();
    float M = s_max[0];
#pragma unroll
    for (int w = 1; w < CB_WARPS; ++w) M = fmaxf(M, s_max[w]);

    const float4* po = reinterpret_cast<const float4*>(part_o + row * nsplit * CB_D) + lane;   // 16-byte aligned rows
    float4 num = make_float4(0.f, 0.f, 0.f, 0.f);
    float den = 0.f;
#pragma unroll 4
    for (int i = warp; i < splits_b; i += CB_WARPS) {
        const float w = exp2f(lse[i] - M);
        const float4 v = po[(size_t)i * (CB_D / 4)];
        den += w;
        num.x += w * v.x; num.y += w * v.y; num.z += w * v.z; num.w += w * v.w;
    }
    s_num[warp][lane] = num;
    if (lane == 0) s_den[warp] = den;
    __syncthreads();
    if (warp == 0) {
        float4 t = s_num[0][lane];
        float d = s_den[0];
#pragma unroll
        for (int w = 1; w < CB_WARPS; ++w) {
            const float4 u = s_num[w][lane];
            t.x += u.x; t.y += u.y; t.z += u.z; t.w += u.w;
            d += s_den[w];
        }
        float* out = o + row * CB_D + 4 * lane;      // o may be any float32 array: scalar stores
        out[0] = t.x / d; out[1] = t.y / d; out[2] = t.z / d; out[3] = t.w / d;
    }
}
