// ex02_saxpy -- reference solution: y[i] = a * x[i] + y[i] (float32, in place), where x and y
// may be views starting at any 4-byte boundary.
//
// Design: 2 flops per 12 bytes of DRAM traffic (read x, read y, write y) -- purely bandwidth
// bound, so the bound targeted is the copy bandwidth, and everything is about keeping enough
// bytes in flight with few, wide memory instructions:
//   * 16-byte accesses. y is both read and written, so y decides the vector layout: the first
//     `head` (0..3) elements up to y's first 16-byte boundary and the last (n - head) % 4 are
//     done with scalar code (threads 0..2 of the grid), the body with float4 loads/stores of y.
//   * x is read in whatever width its own alignment allows at the same element index: float4
//     when x + head is 16-byte aligned too (ox == oy mod 4), two float2 when it is 8-byte
//     aligned, four scalar loads otherwise. The scalar variant costs 4 load instructions per
//     thread instead of 1, but every 32-byte sector it touches is used completely (the four
//     loads of a warp cover 512 contiguous bytes, and the later ones hit in L1), so the DRAM
//     traffic is still the minimum. The choice is uniform over the grid: no divergence.
//   * Grid: one float4 of y per thread, all blocks launched at once (n / 1024 blocks of 256
//     threads), which was the fastest layout for ex01's identical access pattern on the H200;
//     the loop is grid-stride, so any grid size is correct.
//   * x is read once through the read-only path (__ldg); y uses ordinary loads and stores.
//   * Indices are 64-bit: n may be 2^29 (2 GiB per array).

#ifndef SX_THREADS
#define SX_THREADS 256
#endif

// The 16-byte aligned body of y: n4 float4s starting at yb; x at the same element index starts
// at xb, which is 16-byte (XV == 4), 8-byte (XV == 2) or only 4-byte (XV == 1) aligned.
template <int XV>
__device__ __forceinline__ void saxpy_body(float a, const float* __restrict__ xb, float* __restrict__ yb,
                                           long long n4, long long tid, long long stride)
{
    float4* __restrict__ y4 = reinterpret_cast<float4*>(yb);
    for (long long i = tid; i < n4; i += stride) {
        float4 xv;
        if (XV == 4) {
            xv = __ldg(reinterpret_cast<const float4*>(xb) + i);
        } else if (XV == 2) {
            const float2 lo = __ldg(reinterpret_cast<const float2*>(xb) + 2 * i);
            const float2 hi = __ldg(reinterpret_cast<const float2*>(xb) + 2 * i + 1);
            xv = make_float4(lo.x, lo.y, hi.x, hi.y);
        } else {
            const float* p = xb + 4 * i;
            xv = make_float4(__ldg(p), __ldg(p + 1), __ldg(p + 2), __ldg(p + 3));
        }
        float4 yv = y4[i];
        yv.x = fmaf(a, xv.x, yv.x);
        yv.y = fmaf(a, xv.y, yv.y);
        yv.z = fmaf(a, xv.z, yv.z);
        yv.w = fmaf(a, xv.w, yv.w);
        y4[i] = yv;
    }
}

extern "C" __global__ void __launch_bounds__(SX_THREADS)
saxpy(float a, const float* __restrict__ x, float* __restrict__ y, long long n)
{
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;

    // [head | body of n4 float4s, 16-byte aligned in y | tail of < 4 elements]
    const unsigned long long ya = reinterpret_cast<unsigned long long>(y);
    long long head = (long long)(((16ull - (ya & 15ull)) & 15ull) >> 2);
    if (head > n) head = n;
    const long long n4 = (n - head) >> 2;
    const long long tail = head + (n4 << 2);

    if (tid < head) y[tid] = fmaf(a, __ldg(x + tid), y[tid]);
    if (tid < n - tail) y[tail + tid] = fmaf(a, __ldg(x + tail + tid), y[tail + tid]);

    const float* xb = x + head;
    float* yb = y + head;
    const unsigned long long xm = reinterpret_cast<unsigned long long>(xb) & 15ull;
    if (xm == 0)
        saxpy_body<4>(a, xb, yb, n4, tid, stride);
    else if (xm == 8)
        saxpy_body<2>(a, xb, yb, n4, tid, stride);
    else
        saxpy_body<1>(a, xb, yb, n4, tid, stride);
}
