// Sums one 256-element tile per block into acc (a tiled variant of block_sum).
extern "C" __global__ void tile_sum(const float* __restrict__ x, double* acc, long long n) {
    __shared__ float part[256];
    long long i = blockIdx.x * 256LL + threadIdx.x;
    part[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int k = 128; k > 0; k >>= 1) {
        if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(acc, (double)part[0]);
}
