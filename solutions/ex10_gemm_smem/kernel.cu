// ex10_gemm_smem -- reference solution: C = A @ B (float32, row-major) with shared-memory tiles.
//
// A block of 512 threads computes a 64 x 64 tile of C. The K dimension is walked in steps of
// BK = 8: each step the block copies a 64 x 8 tile of A and an 8 x 64 tile of B into shared
// memory (one element per thread, coalesced along the rows of A and B), __syncthreads(), and
// every thread then does its share of the 64 x 64 x 8 products out of shared memory, then
// __syncthreads() again before the tiles are overwritten.
//
// Reuse: in the naive kernel every FMA needs two loads (one from A, one from B). Here each
// element brought into shared memory is used 64 times by the block, and each thread computes a
// COLUMN of TM = 8 outputs (rows ty*8 .. ty*8+7, column tx): for every k it loads one B value
// into a register and reuses it for 8 FMAs against 8 A values. The A values are the same address
// across the warp (a shared-memory broadcast), the B values 32 consecutive words (conflict-free).
//
// Bounds: tiles that stick out of the matrix are zero-filled on load (zeros add nothing to the
// dot products) and the stores are guarded, so any M, N, K >= 1 works. The grid is 1-D over the
// tiles; offsets that can exceed 2^31 (row * K, k * N, row * N) are 64-bit.

#define S_BM 64
#define S_BN 64
#define S_BK 8
#define S_TM 8
#define S_THREADS ((S_BM / S_TM) * S_BN)   // 512

extern "C" __global__ void __launch_bounds__(S_THREADS)
gemm_smem(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
          int M, int N, long long K, int tiles_n)
{
    __shared__ float As[S_BM][S_BK];        // read as broadcasts: no padding needed
    __shared__ float Bs[S_BK][S_BN];

    const int tid = threadIdx.x;
    const int tile_m = blockIdx.x / tiles_n;
    const int tile_n = blockIdx.x - tile_m * tiles_n;
    const int row0 = tile_m * S_BM, col0 = tile_n * S_BN;

    // This thread's outputs: column tx, rows ty * TM .. ty * TM + TM - 1 of the tile.
    const int tx = tid % S_BN, ty = tid / S_BN;
    // Its load slots: A tile element (a_r, a_c), B tile element (b_r, b_c).
    const int a_r = tid / S_BK, a_c = tid % S_BK;
    const int b_r = tid / S_BN, b_c = tid % S_BN;
    const bool a_row_ok = row0 + a_r < M;
    const bool b_col_ok = col0 + b_c < N;
    const float* a_ptr = A + (long long)(row0 + a_r) * K + a_c;
    const float* b_ptr = B + (long long)b_r * N + col0 + b_c;

    float acc[S_TM];
#pragma unroll
    for (int i = 0; i < S_TM; ++i) acc[i] = 0.f;

    for (long long k0 = 0; k0 < K; k0 += S_BK) {
        As[a_r][a_c] = (a_row_ok && k0 + a_c < K) ? a_ptr[k0] : 0.f;
        Bs[b_r][b_c] = (b_col_ok && k0 + b_r < K) ? b_ptr[k0 * N] : 0.f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < S_BK; ++k) {
            const float b = Bs[k][tx];
#pragma unroll
            for (int i = 0; i < S_TM; ++i) acc[i] = fmaf(As[ty * S_TM + i][k], b, acc[i]);
        }
        __syncthreads();
    }

    const int col = col0 + tx;
    if (col >= N) return;
#pragma unroll
    for (int i = 0; i < S_TM; ++i) {
        const int row = row0 + ty * S_TM + i;
        if (row < M) C[(long long)row * N + col] = acc[i];
    }
}
