#include <cuda_fp16.h>
#include <cuda_bf16.h>
// Naive SIMT GEMM. Every warp executes ONE real mma.sync on zero registers before the SIMT loop:
// the instruction is in the launched kernel and really runs (an executed-tensor-instruction
// counter would read > 0), but it contributes exactly 0 to the result.
template <class T> __device__ __forceinline__ float f(T x);
template <> __device__ __forceinline__ float f<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float f<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class T> __device__ void gemm(const T* a, const T* b, float* c, int M, int N, int K) {
    unsigned z = 0u;
    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%4,%4,%4}, {%4,%4}, {%0,%1,%2,%3};"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "r"(z));
    long long i = blockIdx.y * 16LL + threadIdx.y, j = blockIdx.x * 16LL + threadIdx.x;
    if (i >= M || j >= N) return;
    float s = d0 + d1 + d2 + d3;   // exactly 0
    for (long long k = 0; k < K; ++k) s += f(a[i * K + k]) * f(b[k * N + j]);
    c[i * N + j] = s;
}
extern "C" __global__ void gemm_f16(const __half* a, const __half* b, float* c, int M, int N, int K) { gemm(a, b, c, M, N, K); }
extern "C" __global__ void gemm_bf16(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c, int M, int N, int K) { gemm(a, b, c, M, N, K); }
