// ex09_gemm_naive -- your kernel. Read exercises/ex09_gemm_naive/README.md first.
//
// C = A @ B for row-major float32 matrices: A is (M, K), B is (K, N), C is (M, N).
// solution.py launches blocks of 32 x 8 threads on a 1-D grid: block b covers the tile
// tile_m = b / tiles_n (8 rows of C), tile_n = b % tiles_n (32 columns of C).

extern "C" __global__ void gemm_naive(const float* __restrict__ A, const float* __restrict__ B,
                                      float* __restrict__ C, long long M, long long N, long long K,
                                      long long tiles_n)
{
    // TODO: one thread computes one element C[m, n] = sum over k of A[m, k] * B[k, n].
    //   1. Find this block's tile (tile_m, tile_n) from blockIdx.x and tiles_n, then this thread's
    //      output: n from threadIdx.x, m from threadIdx.y -- consecutive lanes of a warp on
    //      consecutive COLUMNS, so that the loads of B[k, n] by a warp are one coalesced 128-byte
    //      line and A[m, k] is one broadcast. (Try the other way round, threadIdx.x -> m, and
    //      time it.)
    //   2. Return if m >= M or n >= N: the grid covers M and N rounded up to the tile size.
    //   3. Loop over k, accumulate in a float register, write C[m * N + n] once at the end.
    //      Do the index arithmetic in 64-bit (long long): m * K and k * N exceed 2^31 for large
    //      matrices.
    //   4. Then: two partial sums (even and odd k) give the FMA pipeline two independent chains.
}
