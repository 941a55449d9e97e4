extern "C" __global__ void vector_add(const float* a, const float* b, float* c, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        c[i] = a[i] + b[i];
}
