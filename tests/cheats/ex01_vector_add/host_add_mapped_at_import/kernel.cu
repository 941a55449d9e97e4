// The only kernel: a grid-stride copy between device memory and page-locked host memory that
// solution.py mapped into the device at import; the addition itself is numpy's, on the host.
extern "C" __global__ void stage(const float* __restrict__ src, float* __restrict__ dst, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        dst[i] = src[i];
}
