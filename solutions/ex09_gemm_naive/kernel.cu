// ex09_gemm_naive -- reference solution: C = A @ B (float32, row-major), one thread per output.
//
// A is (M, K), B is (K, N), C is (M, N), all C-contiguous. Thread (threadIdx.x, threadIdx.y) of
// a 32 x 8 block computes C[m, n] with n = tile_n * 32 + threadIdx.x and m = tile_m * 8 +
// threadIdx.y: consecutive lanes of a warp own consecutive COLUMNS, so for every k
//   * B[k, n .. n+31] is one coalesced 128-byte load per warp (the other 7 warps of the block
//     read the same line, mostly from L1),
//   * A[m, k] is the same address for the whole warp: one broadcast load,
//   * the final store C[m, n .. n+31] is one coalesced 128-byte store.
// Swapping the roles (threadIdx.x -> m) makes every A load touch 32 different rows, i.e. 32
// separate 32-byte sectors per warp per k: an order of magnitude slower (see the fixture
// tests/fixtures/gpu/ex09_gemm_naive_uncoalesced).
//
// The grid is 1-D (tiles_m * tiles_n blocks): M or N alone can exceed the 65535 limit of
// gridDim.y. Row and column offsets are 64-bit (m * K and k * N exceed 2^31 for big shapes).
// The k loop is unrolled by 4 (four independent loads of B in flight per thread, two partial sums);
// that was 8 % faster than a plain loop on an H200. Still load-bound: every FMA needs two loads,
// and nothing is reused from registers.

#define NAIVE_BX 32
#define NAIVE_BY 8

extern "C" __global__ void __launch_bounds__(NAIVE_BX * NAIVE_BY)
gemm_naive(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
           long long M, long long N, long long K, long long tiles_n)
{
    const long long tile_m = blockIdx.x / tiles_n;
    const long long tile_n = blockIdx.x - tile_m * tiles_n;
    const long long n = tile_n * NAIVE_BX + threadIdx.x;
    const long long m = tile_m * NAIVE_BY + threadIdx.y;
    if (m >= M || n >= N) return;

    const float* a = A + m * K;
    const float* b = B + n;
    float acc0 = 0.f, acc1 = 0.f;
    long long k = 0;
    for (; k + 3 < K; k += 4) {
        const float b0 = b[0], b1 = b[N], b2 = b[2 * N], b3 = b[3 * N];
        const float a0 = a[k], a1 = a[k + 1], a2 = a[k + 2], a3 = a[k + 3];
        acc0 = fmaf(a0, b0, acc0);
        acc1 = fmaf(a1, b1, acc1);
        acc0 = fmaf(a2, b2, acc0);
        acc1 = fmaf(a3, b3, acc1);
        b += 4 * N;
    }
    for (; k < K; ++k) {
        acc0 = fmaf(a[k], b[0], acc0);
        b += N;
    }
    C[m * N + n] = acc0 + acc1;
}
