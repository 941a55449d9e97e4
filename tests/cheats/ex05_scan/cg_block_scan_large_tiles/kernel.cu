// ex05 candidate: a three-pass scan whose every parallel step (block reductions, the scan of the
// block totals, the block scans) is cooperative_groups' multi-warp tile code (cg::reduce,
// cg::exclusive_scan over a 512-thread tile): the student writes only serial per-thread loops.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
namespace cg = cooperative_groups;

#define THREADS 512
#define ITEMS 8
#define TILE (THREADS * ITEMS)

template <typename T>
__device__ void tile_sums(const T *x, T *sums, long long n)
{
    __shared__ cg::block_tile_memory<THREADS> scratch;
    auto tile = cg::tiled_partition<THREADS>(cg::this_thread_block(scratch));
    long long base = (long long)blockIdx.x * TILE + (long long)threadIdx.x * ITEMS;
    T s = T(0);
    for (int j = 0; j < ITEMS; ++j)
        if (base + j < n) s += x[base + j];
    T total = cg::reduce(tile, s, cg::plus<T>());
    if (threadIdx.x == 0) sums[blockIdx.x] = total;
}

template <typename T>
__device__ void scan_sums(T *sums, long long tiles)   // one block: exclusive scan of the totals
{
    __shared__ cg::block_tile_memory<THREADS> scratch;
    auto tile = cg::tiled_partition<THREADS>(cg::this_thread_block(scratch));
    T carry = T(0);
    for (long long i0 = 0; i0 < tiles; i0 += THREADS) {
        long long i = i0 + threadIdx.x;
        T v = i < tiles ? sums[i] : T(0);
        T e = cg::exclusive_scan(tile, v, cg::plus<T>());
        T all = cg::reduce(tile, v, cg::plus<T>());
        if (i < tiles) sums[i] = carry + e;
        carry += all;
    }
}

template <typename T>
__device__ void scan_tiles(const T *x, T *y, const T *offsets, long long n)
{
    __shared__ cg::block_tile_memory<THREADS> scratch;
    auto tile = cg::tiled_partition<THREADS>(cg::this_thread_block(scratch));
    long long base = (long long)blockIdx.x * TILE + (long long)threadIdx.x * ITEMS;
    T v[ITEMS];
    T s = T(0);
    for (int j = 0; j < ITEMS; ++j) {
        v[j] = base + j < n ? x[base + j] : T(0);
        s += v[j];
    }
    T run = offsets[blockIdx.x] + cg::exclusive_scan(tile, s, cg::plus<T>());
    for (int j = 0; j < ITEMS; ++j) {
        run += v[j];
        if (base + j < n) y[base + j] = run;
    }
}

#define DEFINE(S, T) \
extern "C" __global__ void __launch_bounds__(THREADS) tile_sums_##S(const T *x, T *s, long long n) { tile_sums<T>(x, s, n); } \
extern "C" __global__ void __launch_bounds__(THREADS) scan_sums_##S(T *s, long long t) { scan_sums<T>(s, t); } \
extern "C" __global__ void __launch_bounds__(THREADS) scan_tiles_##S(const T *x, T *y, const T *o, long long n) { scan_tiles<T>(x, y, o, n); }
DEFINE(i32, int)
DEFINE(f32, float)
