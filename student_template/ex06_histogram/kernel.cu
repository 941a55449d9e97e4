// ex06_histogram -- your kernels. Read exercises/ex06_histogram/README.md first.
//
// bins[v] = number of i in [0, n) with x[i] == v, for 256 bins. bins[] is filled with poison
// (0xA5A5A5A5) before every call, so it must be cleared (or overwritten) on every call before
// anything is added to it. solution.py launches, in this order:
//   1. hist_zero:  one block of 256 threads;
//   2. histogram:  a grid capped at a few blocks per SM, 256 threads per block -- the kernel
//                  must loop over x (grid-stride).

extern "C" __global__ void hist_zero(unsigned int* bins)
{
    // TODO: set all 256 bins to 0.
}

extern "C" __global__ void histogram(const unsigned char* __restrict__ x, unsigned int* __restrict__ bins, long long n)
{
    // TODO: count every x[i] into bins.
    //   1. Correct first: a grid-stride loop (64-bit indices; n can be 2^30) with
    //      atomicAdd(&bins[x[i]], 1u). Correct, and very slow: every byte is an atomic on one
    //      of 256 global addresses.
    //   2. Privatise: count into a __shared__ unsigned int[256] per block (clear it first,
    //      __syncthreads()), then add the block's 256 counts to bins with one atomicAdd per
    //      non-zero bin.
    //   3. Then contention: on skewed data most lanes of a warp hit the same counter; on
    //      uniform data several lanes hit the same bank. Give every lane its own copy of the
    //      histogram, laid out so that lane l's counters are all in bank l.
    //   4. Then bandwidth: read 16 bytes per thread (uint4) and count its 16 bytes.
}
