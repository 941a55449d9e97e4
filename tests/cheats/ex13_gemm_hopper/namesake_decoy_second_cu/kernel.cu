// ex13 submission whose GEMM is NOT a wgmma kernel: a plain shared-memory-tiled SIMT GEMM
// (stand-in for an ex12-style mma.sync kernel), C = A B^T, fp32 accumulation.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

template <typename T>
__device__ __forceinline__ float tof(T x);
template <> __device__ __forceinline__ float tof<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float tof<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T>
__device__ __forceinline__ T fromf(float x);
template <> __device__ __forceinline__ __half fromf<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 fromf<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

template <typename T>
__device__ void simt_gemm(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c,
                          int M, int N, int K) {
    __shared__ float sa[32][33], sb[32][33];
    int tx = threadIdx.x, ty = threadIdx.y;
    long long row = (long long)blockIdx.y * 32 + ty, col = (long long)blockIdx.x * 32 + tx;
    float acc = 0.f;
    for (long long k0 = 0; k0 < K; k0 += 32) {
        long long ar = (long long)blockIdx.y * 32 + ty, br = (long long)blockIdx.x * 32 + ty;
        sa[ty][tx] = (ar < M && k0 + tx < K) ? tof<T>(a[ar * K + k0 + tx]) : 0.f;
        sb[ty][tx] = (br < N && k0 + tx < K) ? tof<T>(b[br * K + k0 + tx]) : 0.f;
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < 32; ++kk) acc = fmaf(sa[ty][kk], sb[tx][kk], acc);
        __syncthreads();
    }
    if (row < M && col < N) c[row * N + col] = fromf<T>(acc);
}

// The names of decoy.cu's wgmma kernels (decoy.cu is compiled by the worker's preload, never launched).
extern "C" __global__ void gemm_hopper_f16(const __half* a, const __half* b, __half* c, int M, int N, int K) {
    simt_gemm<__half>(a, b, c, M, N, K);
}
extern "C" __global__ void gemm_hopper_bf16(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c,
                                            int M, int N, int K) {
    simt_gemm<__nv_bfloat16>(a, b, c, M, N, K);
}
