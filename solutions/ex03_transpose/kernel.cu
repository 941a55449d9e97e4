// ex03_transpose -- reference solution: y = x.T for a row-major float32 (rows, cols) matrix;
// y is row-major (cols, rows).
//
// Design: no arithmetic at all, 8 bytes of compulsory DRAM traffic per element (read x once,
// write y once), so the bound targeted is the copy bandwidth. The whole difficulty is that
// x is read along rows and y is written along columns of x:
//   * Tiles: a block moves one TR x TC tile (TR = 128 rows, TC = 64 columns of x by default): 8
//     warps read the tile's rows from x (each warp instruction reads 32 consecutive floats = one
//     128-byte line), keep it in shared memory, and after __syncthreads() write the tile's columns
//     as rows of y (again 32 consecutive floats per warp instruction). Every global access is
//     coalesced; the reordering happens in shared memory.
//   * Bank conflicts: the tile is stored as tile[TR][TC + 1]. Writing a tile row, lane l
//     touches word (r, l + 32j): banks l + const, conflict-free. Reading a tile column, lane l
//     touches word (l + 32j, c) at offset (l + 32j) * (TC + 1) + c, whose bank is
//     (l + c + const) mod 32 because TC + 1 = 1 (mod 32): conflict-free as well. Without the
//     padding every lane of the column read would hit the same bank (32-way conflict).
//   * Bytes in flight: each thread issues all TR*TC/256 = 32 loads of its part of the tile
//     before storing any of them to shared memory, so a block has a whole 32 KB tile of loads
//     outstanding; 5 resident blocks per SM (48 registers per thread, 33 KB of shared memory
//     per block) keep ~160 KB per SM in flight, enough to cover the DRAM latency at full bandwidth. Stores are fire-and-forget.
//   * Any shape: tiles on the bottom/right edges are partial; every access is bounds-checked
//     (a predicate per element, the same code for full and partial tiles). The grid is 1-D
//     (one block per tile, tile index -> (tile row, tile column)), so more than 65535 tile rows
//     are fine; the loop over tiles is grid-stride, so any grid size is correct.
//   * Tile order: `group` tile columns form a group; tiles are numbered row by row inside a
//     group. The default, group = 1, walks down one tile column after the other: consecutive
//     blocks write consecutive pieces of the same y rows, so the blocks running at one time
//     write one contiguous stretch of y and read scattered 256-byte pieces of x rows (row-major
//     order is the other way round). When rows are not 128-byte aligned (8191 x 12289) every
//     piece a tile writes starts and ends inside a 32-byte sector, and scattered partial-sector
//     writes cost more than scattered reads. (Nsight Compute, old order: DRAM bytes within 5 %
//     of the minimum, so the cost is not extra traffic.) Measured on the H200
//     (benchmarks/RESULTS.md, sixteenth session): 8191 x 12289 went from 0.61x to 0.85x of the
//     copy bandwidth (64 x 64 tiles in row-major order, the
//     previous default, to 128 x 64 in column order), 16384 x 16384 from 0.93x to 0.97x.
//   * Sector-aligned writes (transpose_r{TR}_c{TC}_a{ALIGN}, used when rows % 8 != 0): with such
//     rows the y rows start at every offset inside a 32-byte sector, so each piece a tile writes
//     begins and ends in a partial sector whose two halves two tiles write at different times.
//     Here tile (r0, c0) writes, for y row c, the TR floats from r0 - s(c), s(c) = (c * rows +
//     r0) mod ALIGN, i.e. from an ALIGN-float boundary of y. The tiles of one tile column share
//     the shift (r0 steps by TR, a multiple of ALIGN), so they still cover each y row exactly
//     once: ceil((rows + ALIGN - 1) / TR) tile rows, pieces cut at 0 and at rows. A tile loads
//     ALIGN more x rows (from r0 - ALIGN; 6 % more loads for ALIGN = 8, mostly L2 hits: the
//     tile above ran just before). 8191 x 12289 went from 0.82x to 0.90x of the copy bandwidth
//     (benchmarks/RESULTS.md, twenty-second session; ALIGN = 32, whole 128-byte lines, the same).
//     With rows % ALIGN == 0 every shift is 0, and the plain tiles run. The two are separate
//     templates on purpose: the plain one written as the aligned one with ALIGN = 0 takes 60
//     registers instead of 48 for 128 x 64 (nvcc 13, sm_90), i.e. 4 resident blocks instead of 5.
//   * rows == 1 or cols == 1: x and y have the same memory layout, so the transpose is a plain
//     copy (transpose_copy: float4 grid-stride copy, both buffers are 256-byte aligned).
//   * Indices: rows * cols <= 2^28, so element indices fit in 32 bits; row offsets are still
//     computed in 64-bit (row * cols) to keep the kernel safe for larger inputs.

#ifndef TR_THREADS
#define TR_THREADS 256           // 8 warps; every kernel here is launched with this many threads
#endif

template <int TR, int TC>
__device__ __forceinline__ void transpose_tiles(const float* __restrict__ x, float* __restrict__ y, int rows,
                                                int cols, int tiles_r, int tiles_c, int group)
{
    constexpr int WARPS = TR_THREADS / 32;
    constexpr int RPW = TR / WARPS;      // tile rows (of x) per warp when reading
    constexpr int CPL = TC / 32;         // tile columns per lane when reading
    constexpr int WPW = TC / WARPS;      // tile columns (rows of y) per warp when writing
    constexpr int WPL = TR / 32;         // tile rows (columns of y) per lane when writing
    static_assert(TR % 32 == 0 && TC % 32 == 0 && RPW >= 1 && WPW >= 1, "tile sides: multiples of 32, >= 8 warps' rows");
    __shared__ float tile[TR][TC + 1];

    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const long long ntiles = (long long)tiles_r * tiles_c;
    const long long per_group = (long long)group * tiles_r;

    for (long long t = blockIdx.x; t < ntiles; t += gridDim.x) {
        // tile index -> (tr, tc): groups of `group` tile columns, row-major inside a group
        const int g = (int)(t / per_group);
        const int t_in = (int)(t - (long long)g * per_group);
        const int gw = min(group, tiles_c - g * group);
        const int tr = t_in / gw;
        const int tc = g * group + (t_in - tr * gw);
        const int r0 = tr * TR, c0 = tc * TC;

        // Read the tile: row r0 + warp + WARPS*k, columns c0 + lane + 32*j. All loads first.
        float v[RPW][CPL];
#pragma unroll
        for (int k = 0; k < RPW; ++k) {
            const int r = r0 + warp + WARPS * k;
            const float* xr = x + (long long)r * cols + c0 + lane;
#pragma unroll
            for (int j = 0; j < CPL; ++j) {
                const bool in = r < rows && c0 + lane + 32 * j < cols;
                v[k][j] = in ? __ldg(xr + 32 * j) : 0.f;
            }
        }
#pragma unroll
        for (int k = 0; k < RPW; ++k)
#pragma unroll
            for (int j = 0; j < CPL; ++j) tile[warp + WARPS * k][lane + 32 * j] = v[k][j];
        __syncthreads();

        // Write the tile transposed: y row c0 + warp + WARPS*k (a column of x), y columns
        // r0 + lane + 32*j (rows of x).
#pragma unroll
        for (int k = 0; k < WPW; ++k) {
            const int c = c0 + warp + WARPS * k;
            float* yr = y + (long long)c * rows + r0 + lane;
#pragma unroll
            for (int j = 0; j < WPL; ++j) {
                if (c < cols && r0 + lane + 32 * j < rows) yr[32 * j] = tile[lane + 32 * j][warp + WARPS * k];
            }
        }
        __syncthreads();   // the next tile overwrites `tile`
    }
}

// transpose_r{TR}_c{TC}: tiles of TR rows x TC columns of x; launch one block per tile, with
// TR_THREADS threads. The launcher's default is transpose_r128_c64; the others are
// benchmarks/bench_references.py --tune's variants.
#define TR_KERNEL(TR, TC)                                                                                   \
    extern "C" __global__ void __launch_bounds__(TR_THREADS)                                              \
    transpose_r##TR##_c##TC(const float* __restrict__ x, float* __restrict__ y, int rows, int cols,        \
                            int tiles_r, int tiles_c, int group)                                          \
    {                                                                                                     \
        transpose_tiles<TR, TC>(x, y, rows, cols, tiles_r, tiles_c, group);                               \
    }
TR_KERNEL(128, 64)
TR_KERNEL(64, 64)
TR_KERNEL(128, 32)

// rows == 1 or cols == 1: y has the same layout as x. n elements, both pointers 16-byte aligned
// (checked by the launcher; it passes vec = 0 otherwise and every element is copied singly).
extern "C" __global__ void __launch_bounds__(TR_THREADS)
transpose_copy(const float* __restrict__ x, float* __restrict__ y, long long n, int vec)
{
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long n4 = vec ? (n >> 2) : 0;
    const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
    float4* __restrict__ y4 = reinterpret_cast<float4*>(y);
    for (long long i = tid; i < n4; i += stride) y4[i] = __ldg(x4 + i);
    for (long long i = (n4 << 2) + tid; i < n; i += stride) y[i] = __ldg(x + i);
}

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

// transpose_r{TR}_c{TC}_a{ALIGN}: TR x TC tiles whose y pieces start on ALIGN-float boundaries;
// 4 resident blocks per SM asked of the register allocator (60 registers for 128 x 64, ALIGN 8;
// with 5, as the plain tiles get, it spills). Launch as transpose_r{TR}_c{TC}, with tiles_r =
// ceil((rows + ALIGN - 1) / TR); rows, cols >= 2.
#define TA_KERNEL(TR, TC, ALIGN)                                                                         \
    extern "C" __global__ void __launch_bounds__(TR_THREADS, 4)                                           \
    transpose_r##TR##_c##TC##_a##ALIGN(const float* __restrict__ x, float* __restrict__ y,               \
                                                        int rows, int cols, int tiles_r, int tiles_c, int group) \
    {                                                                                                     \
        transpose_aligned<TR, TC, ALIGN>(x, y, rows, cols, tiles_r, tiles_c, group);                      \
    }
TA_KERNEL(128, 64, 8)
TA_KERNEL(128, 64, 32)
TA_KERNEL(64, 64, 8)
TA_KERNEL(128, 32, 8)
