// ex10_gemm_smem -- your kernel. Read exercises/ex10_gemm_smem/README.md first.
//
// C = A @ B for row-major float32 matrices: A is (M, K), B is (K, N), C is (M, N).
// solution.py launches one block of 512 threads per 64 x 64 tile of C on a 1-D grid: block b
// covers rows tile_m * 64 .. +63 and columns tile_n * 64 .. +63, tile_m = b / tiles_n,
// tile_n = b % tiles_n.

#define S_BM 64
#define S_BN 64
#define S_BK 8
#define S_TM 8                               // outputs per thread (a column of 8)
#define S_THREADS ((S_BM / S_TM) * S_BN)     // 512

extern "C" __global__ void __launch_bounds__(S_THREADS)
gemm_smem(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
          int M, int N, long long K, int tiles_n)
{
    // TODO: shared-memory tiling.
    //   1. Declare __shared__ float As[S_BM][S_BK] and Bs[S_BK][S_BN].
    //   2. Walk K in steps of S_BK. Each step: every thread copies ONE element of the 64 x 8
    //      tile of A and ONE of the 8 x 64 tile of B into shared memory (threads with consecutive
    //      threadIdx.x on consecutive columns, so the loads are coalesced), writing 0 for
    //      elements outside the matrix (row >= M, column >= N or k >= K); __syncthreads(); then
    //      accumulate from shared memory; __syncthreads() again before the next step overwrites
    //      the tiles.
    //   3. Reuse: one output per thread needs a 64 x 64 = 4096-thread block, which is too big.
    //      Give each thread a COLUMN of S_TM = 8 outputs instead (column tx = tid % 64, rows
    //      ty * 8 .. ty * 8 + 7 with ty = tid / 64) in a register array float acc[S_TM]: for each
    //      k, load Bs[k][tx] once into a register and use it for 8 FMAs against As[ty * 8 + i][k]
    //      (the same address for the whole warp: a broadcast).
    //   4. Write the outputs that lie inside C (row < M, column < N). 64-bit offsets:
    //      (long long)row * N, (long long)row * K, k * N.
}
