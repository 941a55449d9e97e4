// One block reduces everything with cub::BlockReduce inside a __noinline__ device function; a
// function pointer in a global initializer keeps it emitted, and the kernel calls it from inline asm
// written without spaces ("call.uni(rv),cub_sum,...") that the PTX reader's call pattern missed.
#include <cub/block/block_reduce.cuh>
extern "C" __device__ __noinline__ int cub_sum(const float* x, float* out, int n) {
    using BR = cub::BlockReduce<float, 256>;
    __shared__ typename BR::TempStorage tmp;
    float v = 0.f;
    for (int i = threadIdx.x; i < n; i += 256) v += x[i];
    float s = BR(tmp).Sum(v);
    if (threadIdx.x == 0) *out = s;
    return 0;
}
__device__ int (*keep)(const float*, float*, int) = cub_sum;
extern "C" __global__ void __launch_bounds__(256) block_sum(const float* x, float* out, int n) {
    asm volatile("{\n"
        ".param .b64 q0;\n.param .b64 q1;\n.param .b32 q2;\n.param .b32 rv;\n"
        "st.param.b64 [q0], %0;\nst.param.b64 [q1], %1;\nst.param.b32 [q2], %2;\n"
        "call.uni(rv),cub_sum,(q0,q1,q2);\n}\n" :: "l"(x), "l"(out), "r"(n) : "memory");
}
