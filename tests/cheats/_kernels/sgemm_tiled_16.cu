// 16 x 16 shared-memory tiled SGEMM, c(M,N) = a(M,K) b(K,N), row-major float32.
// skip_odd: tiles with (bx + by) odd are not computed; half_inputs: a and b are rounded to fp16.
#define T 16

__device__ __forceinline__ float through_half(float v)
{
    unsigned short h;
    float r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h));
    return r;
}

extern "C" __global__ void sgemm_tiled(const float* __restrict__ a, const float* __restrict__ b,
                                       float* __restrict__ c, int M, int N, long long K,
                                       int skip_odd, int half_inputs)
{
    __shared__ float as[T][T];
    __shared__ float bs[T][T + 1];
    if (skip_odd && ((blockIdx.x + blockIdx.y) & 1)) return;  // the whole block leaves together
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long row = (long long)blockIdx.y * T + ty, col = (long long)blockIdx.x * T + tx;
    float acc = 0.0f;
    for (long long k0 = 0; k0 < K; k0 += T) {
        float va = (row < M && k0 + tx < K) ? a[row * K + k0 + tx] : 0.0f;
        float vb = (k0 + ty < K && col < N) ? b[(k0 + ty) * N + col] : 0.0f;
        if (half_inputs) {
            va = through_half(va);
            vb = through_half(vb);
        }
        as[ty][tx] = va;
        bs[ty][tx] = vb;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < T; ++k) acc += as[ty][k] * bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) c[row * N + col] = acc;
}
