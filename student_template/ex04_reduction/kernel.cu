// ex04_reduction -- your kernels. Read exercises/ex04_reduction/README.md first.
//
// out[0] = sum of x[0..n). Two kernels, launched one after the other by solution.py:
//   reduce_partial: gridDim.x blocks of 256 threads; block b writes the sum of its share of x
//                   to partials[b] (exactly one float per block, on every call).
//   reduce_final:   ONE block of 256 threads; sums partials[0..num_partials) into out[0].
// out[] is filled with NaN before every call, so reduce_final must always write out[0];
// do not accumulate into it with atomicAdd.

extern "C" __global__ void reduce_partial(const float* __restrict__ x, float* __restrict__ partials,
                                          long long n)
{
    // TODO: sum this block's share of x and write it to partials[blockIdx.x].
    //   1. Grid-stride loop (64-bit indices): the grid is only a few blocks per SM, so each
    //      thread adds up many elements into its own register(s).
    //   2. Reduce the 256 per-thread sums to one: __shfl_xor_sync / __shfl_down_sync inside each
    //      warp, then the 8 warp sums through a small __shared__ array (with __syncthreads()).
    //   3. Thread 0 writes the block's sum.
    //   Fast: 16-byte loads (float4) once x is 16-byte aligned (handle the elements before the
    //   first aligned address and the last n % 4 separately), several loads in flight per thread,
    //   and several independent accumulators (also better for accuracy).
}

extern "C" __global__ void reduce_final(const float* __restrict__ partials, float* __restrict__ out,
                                        int num_partials)
{
    // TODO: sum partials[0..num_partials) with this single block (same block reduction as
    // above) and write the total to out[0]. Accumulating these few hundred values in double
    // costs nothing and helps accuracy.
}
