// ex05_scan -- your kernels. Read exercises/ex05_scan/README.md first.
//
// y[i] = x[0] + x[1] + ... + x[i] (inclusive prefix sum), for int32 and float32 x. Each kernel
// is written once as a template and exported for both types by the extern "C" wrappers below.
//
// solution.py runs a "reduce, then scan" plan with tiles of TILE = 1024 elements (256 threads,
// 4 elements per thread); num_tiles = ceil(n / TILE):
//   1. scan_tile_sums_*  (num_tiles blocks of 256): sums[b] = sum of tile b.
//   2. scan_sums_*       (ONE block of 1024):      sums[] becomes its EXCLUSIVE prefix sum
//                                                   (sums[b] = sum of tiles 0 .. b-1).
//   3. scan_tiles_*      (num_tiles blocks of 256): y over tile b = inclusive scan of the tile
//                                                   + sums[b].
// That reads x twice. The fast way reads it once (decoupled look-back: README, hints 6-7).

#define TILE 1024

template <class T>
__device__ void tile_sums(const T* __restrict__ x, T* __restrict__ sums, long long n)
{
    // TODO: block b adds up x[b * TILE .. min((b + 1) * TILE, n)) and writes the total to
    // sums[b] (one value per block, on every call). Compute element indices in 64-bit
    // ((long long)blockIdx.x * TILE + ...). Block reduction: warp shuffles, then a small
    // __shared__ array of the 8 warp totals.
}

template <class T>
__device__ void scan_sums(T* sums, int num_tiles)
{
    // TODO: one block of 1024 threads turns sums[0 .. num_tiles) into its exclusive prefix sum,
    // in place. num_tiles can be 262144 (n = 2^28): loop over chunks of 1024 values, scan each
    // chunk (warp scans with __shfl_up_sync + a scan of the warp totals), add the running total
    // of the previous chunks, and carry the chunk total forward.
}

template <class T>
__device__ void scan_tiles(const T* __restrict__ x, T* __restrict__ y, const T* __restrict__ sums, long long n)
{
    // TODO: block b scans its tile (each thread: its 4 consecutive elements serially; then a
    // warp scan of the thread totals; then a scan of the 8 warp totals through shared memory),
    // adds sums[b], and writes y for every element of the tile that is < n. The last tile is
    // usually partial: treat missing elements as 0 and never write past n.
}

extern "C" __global__ void scan_tile_sums_i32(const int* x, int* sums, long long n) { tile_sums<int>(x, sums, n); }
extern "C" __global__ void scan_tile_sums_f32(const float* x, float* sums, long long n) { tile_sums<float>(x, sums, n); }
extern "C" __global__ void scan_sums_i32(int* sums, int num_tiles) { scan_sums<int>(sums, num_tiles); }
extern "C" __global__ void scan_sums_f32(float* sums, int num_tiles) { scan_sums<float>(sums, num_tiles); }
extern "C" __global__ void scan_tiles_i32(const int* x, int* y, const int* sums, long long n)
{
    scan_tiles<int>(x, y, sums, n);
}
extern "C" __global__ void scan_tiles_f32(const float* x, float* y, const float* sums, long long n)
{
    scan_tiles<float>(x, y, sums, n);
}
