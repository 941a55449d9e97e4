// ex04_reduction -- reference solution: out[0] = sum(x) for a float32 vector of any length.
//
// Design: one FADD per 4 bytes read -- memory-bandwidth bound, so the goal is to stream x
// from HBM at full speed exactly once and keep the reduction overhead off the critical path.
//   * block_sum<U>: a persistent grid (a few blocks per SM, sized by the launcher) grid-strides
//     over x with 16-byte loads (LDG.E.128), U float4s in flight per thread (all loads issued
//     before any add), then reduces the block's 256 per-thread sums (shuffles + shared memory).
//   * Two ways to finish, both leave `out` fully written on every call (it is NaN on entry):
//       - reduce_partial + reduce_final (the structure of the student template): every block
//         writes its sum to a scratch array; a second, single-block kernel adds those few
//         hundred partials in double and writes out[0].
//       - reduce_onepass_u{8,4} (what solve() uses): every block adds its sum (as a double)
//         to a scratch accumulator with atomicAdd, then increments a counter; the block that
//         brings the counter to gridDim.x reads the total, writes out[0], and resets both
//         scratch words to zero for the next call. This saves the second launch (~3 us:
//         about 1 % at n = 2^28 and 5-10 % at n = 2^24 on an H200).
//   * Accuracy: each thread keeps U float4 accumulators (4*U independent float sums), so each
//     float sum only sees ~n/(4*U*threads) terms; those are combined pairwise (shuffle tree in
//     the warp, tree over warps) and the block sums in double. Error grows like the short
//     per-accumulator chains, not like n.
//   * Alignment: the elements before the first 16-byte boundary (at most 3) and the (n-head)%4
//     trailing elements are added by scalar loads, so any 4-byte aligned x works.
//   * Indices are 64-bit: n may exceed 2^31.

#ifndef RD_UNROLL
#define RD_UNROLL 8              // float4s in flight per thread in reduce_partial
#endif
#ifndef RD_THREADS
#define RD_THREADS 256           // every kernel but reduce_final is launched with this many threads
#endif
#ifndef FINAL_THREADS
#define FINAL_THREADS 1024       // reduce_final must be launched with exactly this many threads
#endif

__device__ __forceinline__ float warp_sum_f(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ double warp_sum_d(double v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Sum of this block's share of x. The result is valid in thread 0 only.
template <int U>
__device__ __forceinline__ float block_sum(const float* __restrict__ x, long long n)
{
    const long long tid = (long long)blockIdx.x * RD_THREADS + threadIdx.x;
    const long long stride = (long long)gridDim.x * RD_THREADS;

    // Split x into [head | 16-byte aligned float4 body | tail].
    const unsigned long long addr = reinterpret_cast<unsigned long long>(x);
    long long head = (long long)(((16ull - (addr & 15ull)) & 15ull) >> 2);
    if (head > n) head = n;
    const long long n4 = (n - head) >> 2;
    const long long tail_start = head + (n4 << 2);
    const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x + head);

    float4 acc[U];
#pragma unroll
    for (int u = 0; u < U; ++u) acc[u] = make_float4(0.f, 0.f, 0.f, 0.f);

    long long i = tid;
    for (; i + (U - 1) * stride < n4; i += U * stride) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = __ldg(x4 + i + u * stride);
#pragma unroll
        for (int u = 0; u < U; ++u) {
            acc[u].x += v[u].x; acc[u].y += v[u].y; acc[u].z += v[u].z; acc[u].w += v[u].w;
        }
    }
    for (; i < n4; i += stride) {  // at most U-1 leftovers per thread
        const float4 v = __ldg(x4 + i);
        acc[0].x += v.x; acc[0].y += v.y; acc[0].z += v.z; acc[0].w += v.w;
    }
    // Scalar head (< 4 elements) and tail (< 4 elements), one element per thread.
    if (tid < head) acc[0].x += x[tid];
    if (tid < n - tail_start) acc[0].y += x[tail_start + tid];

    // Pairwise combine of the thread's accumulators.
#pragma unroll
    for (int w = U / 2; w > 0; w >>= 1) {
#pragma unroll
        for (int u = 0; u < w; ++u) {
            acc[u].x += acc[u + w].x; acc[u].y += acc[u + w].y;
            acc[u].z += acc[u + w].z; acc[u].w += acc[u + w].w;
        }
    }
    float s = (acc[0].x + acc[0].y) + (acc[0].z + acc[0].w);

    // Block reduction: shuffle tree in each warp, then warp 0 reduces the warp sums.
    __shared__ float warp_sums[RD_THREADS / 32];
    s = warp_sum_f(s);
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = (lane < RD_THREADS / 32) ? warp_sums[lane] : 0.f;
        s = warp_sum_f(s);
    }
    return s;
}

// ---- two-kernel version -------------------------------------------------------------------

extern "C" __global__ void __launch_bounds__(RD_THREADS)
reduce_partial(const float* __restrict__ x, float* __restrict__ partials, long long n)
{
    const float s = block_sum<RD_UNROLL>(x, n);
    if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

extern "C" __global__ void __launch_bounds__(FINAL_THREADS)
reduce_final(const float* __restrict__ partials, float* __restrict__ out, int num_partials)
{
    double s = 0.0;
    for (int i = threadIdx.x; i < num_partials; i += FINAL_THREADS) s += (double)partials[i];

    __shared__ double warp_sums[FINAL_THREADS / 32];
    s = warp_sum_d(s);
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = (lane < FINAL_THREADS / 32) ? warp_sums[lane] : 0.0;
        s = warp_sum_d(s);
        if (lane == 0) out[0] = (float)s;
    }
}

// ---- single-pass version ------------------------------------------------------------------
// scratch[0] (double) accumulates the block sums and counter[0] counts finished blocks; both
// must be zero before the first launch (the launcher allocates them zeroed) and are reset to
// zero by the last block, so consecutive launches on one stream need no initialisation.

template <int U>
__device__ __forceinline__ void reduce_onepass_impl(const float* __restrict__ x, double* scratch,
                                                    unsigned int* counter, float* __restrict__ out,
                                                    long long n)
{
    const float s = block_sum<U>(x, n);
    if (threadIdx.x == 0) {
        atomicAdd(scratch, (double)s);
        __threadfence();                        // our add is visible before our count
        if (atomicAdd(counter, 1u) == gridDim.x - 1) {
            __threadfence();                    // every other block's add is visible to us
            const unsigned long long bits =
                atomicExch(reinterpret_cast<unsigned long long*>(scratch), 0ull);
            out[0] = (float)__longlong_as_double((long long)bits);
            atomicExch(counter, 0u);
        }
    }
}

extern "C" __global__ void __launch_bounds__(RD_THREADS)
reduce_onepass_u8(const float* __restrict__ x, double* scratch, unsigned int* counter,
                  float* __restrict__ out, long long n)
{
    reduce_onepass_impl<8>(x, scratch, counter, out, n);
}

extern "C" __global__ void __launch_bounds__(RD_THREADS)
reduce_onepass_u4(const float* __restrict__ x, double* scratch, unsigned int* counter,
                  float* __restrict__ out, long long n)
{
    reduce_onepass_impl<4>(x, scratch, counter, out, n);
}
