// ex03_transpose candidate (benchmarks only, not the reference yet): the reference's tiled
// transpose (solutions/ex03_transpose/kernel.cu: TR x TC tiles through padded shared memory, tiles
// walked down one tile column after the other), with every piece of a y row that a tile writes
// starting on an ALIGN-float boundary of y.
//
// Why: at 8191 x 12289 the reference reaches 0.82-0.85x copy, at 16384^2 0.97x (benchmarks/
// RESULTS.md, sixteenth session). With rows % 8 != 0 the y rows start at every offset inside a
// 32-byte sector, so each 128-float piece a tile writes begins and ends in a partial sector, and
// two tiles write the two halves of that sector at different times. Nsight Compute showed DRAM
// bytes within 5 % of the minimum, so the cost is in the partial-sector writes, not the traffic.
//
// How: tile (r0, c0) writes, for y row c, the 128 floats r0 - s(c) .. r0 - s(c) + TR - 1, where
// s(c) = (c * rows + r0) mod ALIGN shifts the piece back to an aligned start. Tiles of one tile
// column use the same shift (r0 steps by TR, a multiple of ALIGN), so they still cover each y row
// exactly once: tiles_r = ceil((rows + ALIGN - 1) / TR) tile rows, the first piece of a row cut
// at 0, the last at rows. A tile therefore loads ALIGN more rows of x (from r0 - ALIGN), ALIGN / TR
// more load instructions (6 % for ALIGN = 8, mostly L2 hits: the tile above ran just before).
// ALIGN = 8 aligns to 32-byte sectors, ALIGN = 32 to 128-byte lines.
//
// Launch: one block of TR_THREADS threads per tile (grid-stride, any grid is correct), tiles_r as
// above, group as in the reference. rows, cols >= 2 and rows % ALIGN != 0 (the launcher leaves
// rows == 1 or cols == 1, a copy, and rows % ALIGN == 0, where every shift is 0, to the reference).
// Register use (nvcc -Xptxas -v, sm_90, 2026-12-03): the reference's 128 x 64 tile 48 registers,
// 5 blocks per SM; here 128 x 64 with ALIGN 8: 66 registers (3 blocks per SM) with MINB 1, 60
// (4 blocks) with MINB 4, 48 with a 16-byte spill (5 blocks) with MINB 5; 128 x 64 with ALIGN 32
// and MINB 4: 64; 128 x 32, ALIGN 8, MINB 5: 46; 256 x 32, ALIGN 8: 68. The MINB variants trade
// registers for resident blocks, i.e. for bytes in flight.

#define TR_THREADS 256

template <int TR, int TC, int ALIGN>
__device__ __forceinline__ void transpose_aligned(const float* __restrict__ x, float* __restrict__ y, int rows,
                                                  int cols, int tiles_r, int tiles_c, int group)
{
    constexpr int WARPS = TR_THREADS / 32;
    constexpr int LR = TR + ALIGN;       // rows of x loaded per tile: r0 - ALIGN .. r0 + TR - 1
    constexpr int RPW = LR / WARPS;      // loaded rows per warp
    constexpr int CPL = TC / 32;         // tile columns per lane when reading
    constexpr int WPW = TC / WARPS;      // y rows per warp when writing
    constexpr int WPL = TR / 32;         // y columns per lane when writing
    static_assert(LR % WARPS == 0 && TC % 32 == 0 && TR % 32 == 0 && WPW >= 1 && (ALIGN & (ALIGN - 1)) == 0,
                  "tile shape");
    __shared__ float tile[LR][TC + 1];

    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const long long ntiles = (long long)tiles_r * tiles_c;
    const long long per_group = (long long)group * tiles_r;

    for (long long t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const int g = (int)(t / per_group);
        const int t_in = (int)(t - (long long)g * per_group);
        const int gw = min(group, tiles_c - g * group);
        const int tr = t_in / gw;
        const int tc = g * group + (t_in - tr * gw);
        const int r0 = tr * TR, c0 = tc * TC;

        // tile row i holds x row r0 - ALIGN + i
        float v[RPW][CPL];
#pragma unroll
        for (int k = 0; k < RPW; ++k) {
            const int r = r0 - ALIGN + warp + WARPS * k;
            const long long xi = (long long)r * cols + c0 + lane;     // an index: r < 0 forms no pointer
#pragma unroll
            for (int j = 0; j < CPL; ++j) {
                const bool in = r >= 0 && r < rows && c0 + lane + 32 * j < cols;
                v[k][j] = in ? __ldg(x + xi + 32 * j) : 0.f;
            }
        }
#pragma unroll
        for (int k = 0; k < RPW; ++k)
#pragma unroll
            for (int j = 0; j < CPL; ++j) tile[warp + WARPS * k][lane + 32 * j] = v[k][j];
        __syncthreads();

#pragma unroll
        for (int k = 0; k < WPW; ++k) {
            const int c = c0 + warp + WARPS * k;
            const long long row_start = (long long)c * rows;
            const int s = (int)((row_start + r0) & (ALIGN - 1));
#pragma unroll
            for (int j = 0; j < WPL; ++j) {
                const int r = r0 - s + lane + 32 * j;
                if (c < cols && r >= 0 && r < rows) y[row_start + r] = tile[ALIGN - s + lane + 32 * j][warp + WARPS * k];
            }
        }
        __syncthreads();
    }
}

// transpose_aligned_r{TR}_c{TC}_a{ALIGN}_b{MINB}: MINB = the resident blocks per SM asked of the
// register allocator (__launch_bounds__' second argument; the reference's 128 x 64 gets 5).
#define TA_KERNEL(TR, TC, ALIGN, MINB)                                                                    \
    extern "C" __global__ void __launch_bounds__(TR_THREADS, MINB)                                        \
    transpose_aligned_r##TR##_c##TC##_a##ALIGN##_b##MINB(const float* __restrict__ x, float* __restrict__ y, \
                                                        int rows, int cols, int tiles_r, int tiles_c, int group) \
    {                                                                                                     \
        transpose_aligned<TR, TC, ALIGN>(x, y, rows, cols, tiles_r, tiles_c, group);                      \
    }
TA_KERNEL(128, 64, 8, 1)
TA_KERNEL(128, 64, 8, 4)
TA_KERNEL(128, 64, 8, 5)
TA_KERNEL(128, 64, 32, 4)
TA_KERNEL(128, 32, 8, 5)
TA_KERNEL(256, 32, 8, 1)
