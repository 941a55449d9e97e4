// ex04 candidate: every step of the parallel reduction is cooperative_groups' code.
// The student writes only a serial per-thread loop; the block-level tree reduction (warp
// shuffles, the inter-warp step through CG's reserved shared memory, barriers) and the
// grid-level combine (one atomic update per block) are cg::reduce_update_async over a
// 512-thread multi-warp tile, the same work cub::BlockReduce + atomicAdd would do.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda/atomic>
namespace cg = cooperative_groups;

extern "C" __global__ void zero_acc(double *acc) { acc[0] = 0.0; }

extern "C" __global__ void __launch_bounds__(512) block_sum(const float *x, double *acc, long long n)
{
    __shared__ cg::block_tile_memory<512> scratch;   // empty on sm_80+: CG uses reserved smem
    cg::thread_block block = cg::this_thread_block(scratch);
    auto tile = cg::tiled_partition<512>(block);
    float v = 0.0f;
    for (long long i = blockIdx.x * 512LL + threadIdx.x; i < n; i += (long long)gridDim.x * 512)
        v += x[i];
    cuda::atomic_ref<double, cuda::thread_scope_device> dst(acc[0]);
    cg::reduce_update_async(tile, dst, (double)v, cg::plus<double>());
}

extern "C" __global__ void finish(const double *acc, float *out) { out[0] = (float)acc[0]; }
