// ex07_softmax -- reference solution: row-wise softmax of a float32 (rows, cols) matrix.
//
// Design: softmax does ~5 flops per element against 8 bytes of compulsory traffic (read x once,
// write y once), so it is memory-bandwidth bound; the target is ONE pass over memory (8 B/elem),
// i.e. copy bandwidth. A row is read into registers once, reduced twice (max, then sum of
// exponentials) and written from the same registers, so x is never read twice. The launcher
// picks one of three paths from cols:
//
//   1. cols <= 1024 (v4) / 512 (v1): softmax_warp_v{4,1}_n{N} -- a group of G lanes (G a power
//      of two <= 32, runtime) owns one row; each lane holds N float4s (v4) or N floats (v1).
//      Reductions are pure __shfl_xor_sync (xor offsets < G stay inside the group), no shared
//      memory, no __syncthreads. Tiny rows use G < 32 so a warp works on 32/G rows at once.
//   2. cols <= 32768: softmax_block_v{4,1}_n{N} -- one block per row (grid-stride over
//      rows), blockDim = ceil(cols/(VEC*N)) rounded to a warp, each thread holding N float4s
//      (or N floats). Block reductions: warp shuffles + one shared-memory exchange each.
//   3. cols > 32768 (the row no longer fits in registers): two passes over x (12 B/elem).
//      softmax_chunk_stats splits every row into chunks of a few ten-thousand elements, one
//      block per chunk, and computes the chunk's (max, sum exp(x - max)) with the online
//      (running max, rescaled sum) recurrence; softmax_chunk_write combines a row's chunk
//      statistics and writes its chunk of y. Splitting rows keeps every SM busy even for
//      rows=1, cols=2^26. The write pass walks the chunks in reverse order so that its first
//      blocks find the tail of x that the stats pass left in L2. softmax_kernel (one block per
//      row, online stats then a write pass; works for any shape and alignment) is the generic
//      fallback used for long rows when there are many of them.
//
// v4 variants need cols % 4 == 0 and 16-byte aligned x and y (every row then starts on a
// 16-byte boundary) and use 128-bit loads/stores; v1 variants use coalesced scalar accesses.
// Numerics: exp(d) with d = x - max <= 0 is computed as exp2f(d * log2(e)); x - max is
// correctly rounded, so the relative error of each term stays ~1e-6 even for |x| ~ 1e4, and
// nothing overflows. Out-of-range slots hold -FLT_MAX and contribute exactly 0; -FLT_MAX (not
// -inf) is the identity of max so that combining two empty partials never computes inf - inf.
// Row offsets are 64-bit (row * cols).

#define SM_LOG2E 1.4426950408889634f
#define SM_NEG_BIG (-3.402823466e+38f)   // -FLT_MAX
#define SM_FULL 0xffffffffu

__device__ __forceinline__ float sm_exp(float d)   // e^d for d <= 0
{
    return exp2f(d * SM_LOG2E);
}

// (m, s) <- (m, s) (+) (m2, s2), where s is a sum of exp(x - m).
__device__ __forceinline__ void sm_combine(float& m, float& s, float m2, float s2)
{
    const float mm = fmaxf(m, m2);
    s = s * sm_exp(m - mm) + s2 * sm_exp(m2 - mm);
    m = mm;
}

__device__ __forceinline__ float group_max(float v, int g)   // g: power of two <= 32
{
    for (int o = g >> 1; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(SM_FULL, v, o));
    return v;
}

__device__ __forceinline__ float group_sum(float v, int g)
{
    for (int o = g >> 1; o > 0; o >>= 1) v += __shfl_xor_sync(SM_FULL, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(SM_FULL, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(SM_FULL, v, o);
    return v;
}

__device__ __forceinline__ void warp_combine(float& m, float& s)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(SM_FULL, m, o);
        const float s2 = __shfl_xor_sync(SM_FULL, s, o);
        sm_combine(m, s, m2, s2);
    }
}

// Block-wide reductions; blockDim.x must be a multiple of 32. Every thread gets the result.
// sh must hold 32 floats and must not be reused before the next __syncthreads().
__device__ __forceinline__ float block_max(float v, float* sh)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = warp_max(v);
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    return warp_max(lane < nwarps ? sh[lane] : SM_NEG_BIG);
}

__device__ __forceinline__ float block_sum(float v, float* sh)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = warp_sum(v);
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    return warp_sum(lane < nwarps ? sh[lane] : 0.f);
}

__device__ __forceinline__ void block_combine(float& m, float& s, float* sh_m, float* sh_s)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    warp_combine(m, s);
    if (lane == 0) { sh_m[warp] = m; sh_s[warp] = s; }
    __syncthreads();
    m = lane < nwarps ? sh_m[lane] : SM_NEG_BIG;
    s = lane < nwarps ? sh_s[lane] : 0.f;
    warp_combine(m, s);
}

// ---------------------------------------------------------------------------------------------
// Register-resident rows. Thread `sub` of a row's `g` threads owns the VEC-wide slots
// sub, sub + g, sub + 2g, ... (N of them): consecutive threads touch consecutive 16-byte (or
// 4-byte) words, so every warp access is coalesced.

// Number of the N slots of thread `sub` (out of g per row) that lie inside a row of `units`
// VEC-wide words: slots k < nk are in range.
__device__ __forceinline__ int slots_in_row(int units, int sub, int g)
{
    const int rem = units - sub;
    return rem > 0 ? (rem + g - 1) / g : 0;
}

// Loads the thread's slots of row xr (xr already offset by sub * VEC) into v; returns their max.
template <int VEC, int N>
__device__ __forceinline__ float load_row(const float* __restrict__ xr, int g, int nk, float (&v)[N * VEC])
{
#pragma unroll
    for (int k = 0; k < N; ++k) {
        if (VEC == 4) {
            float4 t = make_float4(SM_NEG_BIG, SM_NEG_BIG, SM_NEG_BIG, SM_NEG_BIG);
            if (k < nk) t = __ldg(reinterpret_cast<const float4*>(xr) + (long long)k * g);
            v[4 * k + 0] = t.x; v[4 * k + 1] = t.y; v[4 * k + 2] = t.z; v[4 * k + 3] = t.w;
        } else {
            v[k] = (k < nk) ? __ldg(xr + (long long)k * g) : SM_NEG_BIG;
        }
    }
    float m = v[0];
#pragma unroll
    for (int e = 1; e < N * VEC; ++e) m = fmaxf(m, v[e]);
    return m;
}

// v <- exp(v - m) (0 for out-of-range slots); returns the thread's sum.
template <int VEC, int N>
__device__ __forceinline__ float exp_row(int nk, float m, float (&v)[N * VEC])
{
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < N; ++k) {
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            const float e = (k < nk) ? sm_exp(v[VEC * k + j] - m) : 0.f;
            v[VEC * k + j] = e;
            s += e;
        }
    }
    return s;
}

template <int VEC, int N>
__device__ __forceinline__ void store_row(float* __restrict__ yr, int g, int nk, float inv,
                                          const float (&v)[N * VEC])
{
#pragma unroll
    for (int k = 0; k < N; ++k) {
        if (k < nk) {
            if (VEC == 4) {
                reinterpret_cast<float4*>(yr)[(long long)k * g] =
                    make_float4(v[4 * k] * inv, v[4 * k + 1] * inv, v[4 * k + 2] * inv, v[4 * k + 3] * inv);
            } else {
                yr[(long long)k * g] = v[k] * inv;
            }
        }
    }
}

// Path 1: 2^log2g lanes per row (log2g = 5 whenever N > 1), cols <= 2^log2g * N * VEC.
template <int VEC, int N>
__device__ __forceinline__ void softmax_warp_impl(const float* __restrict__ x, float* __restrict__ y,
                                                  long long rows, long long cols, int log2g)
{
    // Only N == 1 is launched with fewer than 32 lanes per row; for N > 1 the group is the whole
    // warp, and a compile-time g turns the slot offsets into immediates.
    if (N > 1) log2g = 5;
    const int g = 1 << log2g;
    const int lane = threadIdx.x & 31;
    const int sub = lane & (g - 1);
    const int grp = lane >> log2g;
    const int nk_full = slots_in_row((int)cols / VEC, sub, g);
    const long long rows_per_warp = 32 >> log2g;
    const long long warp_id = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long num_warps = ((long long)gridDim.x * blockDim.x) >> 5;

    // The loop condition is warp-uniform, so all 32 lanes reach every shuffle.
    for (long long base = warp_id * rows_per_warp; base < rows; base += num_warps * rows_per_warp) {
        const long long row = base + grp;
        const int nk = (row < rows) ? nk_full : 0;
        const long long off = row * cols + sub * VEC;
        float v[N * VEC];
        float m = load_row<VEC, N>(x + off, g, nk, v);
        m = group_max(m, g);
        float s = exp_row<VEC, N>(nk, m, v);
        s = group_sum(s, g);
        store_row<VEC, N>(y + off, g, nk, 1.0f / s, v);
    }
}

// Path 2: one block per row, cols <= blockDim.x * N * VEC.
template <int VEC, int N>
__device__ __forceinline__ void softmax_block_impl(const float* __restrict__ x, float* __restrict__ y,
                                                   long long rows, long long cols)
{
    // Two buffers: the max exchange of row r+1 cannot overwrite sh_max before every warp has
    // read it for row r, because all warps pass the sum's __syncthreads() in between (and
    // symmetrically for sh_sum).
    __shared__ float sh_max[32];
    __shared__ float sh_sum[32];
    const int g = blockDim.x;
    const int t = threadIdx.x;
    const int nk = slots_in_row((int)cols / VEC, t, g);
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const long long off = row * cols + t * VEC;
        float v[N * VEC];
        float m = load_row<VEC, N>(x + off, g, nk, v);
        m = block_max(m, sh_max);
        float s = exp_row<VEC, N>(nk, m, v);
        s = block_sum(s, sh_sum);
        store_row<VEC, N>(y + off, g, nk, 1.0f / s, v);
    }
}

// ---------------------------------------------------------------------------------------------
// Streaming (two-pass) helpers for rows that do not fit in registers. The block walks
// [start, end) of one row; each step every thread loads U VEC-wide words (all loads issued
// before use, so U*VEC*4 bytes are in flight per thread).

template <int VEC>
__device__ __forceinline__ void online_stats(const float* __restrict__ xr, long long start, long long end,
                                             float& m, float& s)
{
    constexpr int U = (VEC == 4) ? 4 : 8;
    const long long step = (long long)blockDim.x * VEC;
    for (long long c0 = start + (long long)threadIdx.x * VEC; c0 < end; c0 += U * step) {
        float v[U * VEC];
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const long long c = c0 + k * step;
            const bool ok = c < end;
            if (VEC == 4) {
                float4 t = make_float4(SM_NEG_BIG, SM_NEG_BIG, SM_NEG_BIG, SM_NEG_BIG);
                if (ok) t = __ldg(reinterpret_cast<const float4*>(xr + c));
                v[4 * k + 0] = t.x; v[4 * k + 1] = t.y; v[4 * k + 2] = t.z; v[4 * k + 3] = t.w;
            } else {
                v[k] = ok ? __ldg(xr + c) : SM_NEG_BIG;
            }
        }
        float mx = v[0];
#pragma unroll
        for (int e = 1; e < U * VEC; ++e) mx = fmaxf(mx, v[e]);
        if (mx > m) {                 // v[0] is always in range, so mx is a real value
            s *= sm_exp(m - mx);
            m = mx;
        }
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const bool ok = c0 + k * step < end;
#pragma unroll
            for (int j = 0; j < VEC; ++j) s += ok ? sm_exp(v[VEC * k + j] - m) : 0.f;
        }
    }
}

template <int VEC>
__device__ __forceinline__ void write_range(const float* __restrict__ xr, float* __restrict__ yr,
                                            long long start, long long end, float m, float inv)
{
    constexpr int U = (VEC == 4) ? 4 : 8;
    const long long step = (long long)blockDim.x * VEC;
    for (long long c0 = start + (long long)threadIdx.x * VEC; c0 < end; c0 += U * step) {
        float v[U * VEC];
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const long long c = c0 + k * step;
            if (c < end) {
                if (VEC == 4) {
                    const float4 t = __ldg(reinterpret_cast<const float4*>(xr + c));
                    v[4 * k + 0] = t.x; v[4 * k + 1] = t.y; v[4 * k + 2] = t.z; v[4 * k + 3] = t.w;
                } else {
                    v[k] = __ldg(xr + c);
                }
            }
        }
#pragma unroll
        for (int k = 0; k < U; ++k) {
            const long long c = c0 + k * step;
            if (c < end) {
                if (VEC == 4) {
                    const float4 o = make_float4(
                        sm_exp(v[4 * k + 0] - m) * inv, sm_exp(v[4 * k + 1] - m) * inv,
                        sm_exp(v[4 * k + 2] - m) * inv, sm_exp(v[4 * k + 3] - m) * inv);
                    // (indexing a float4 pointer keeps this one 16-byte store; storing through
                    // reinterpret_cast<float4*>(yr + c) got split into 4 scalar stores)
                    reinterpret_cast<float4*>(yr)[c >> 2] = o;
                } else {
                    yr[c] = sm_exp(v[k] - m) * inv;
                }
            }
        }
    }
}

// Path 3a: statistics of chunk (blockIdx.x % chunks) of row (blockIdx.x / chunks).
template <int VEC>
__device__ __forceinline__ void chunk_stats_impl(const float* __restrict__ x, float2* __restrict__ stats,
                                                 long long rows, long long cols, long long chunk, int chunks)
{
    __shared__ float sh_m[32];
    __shared__ float sh_s[32];
    const long long b = blockIdx.x;
    const long long row = b / chunks;
    const long long start = (b - row * chunks) * chunk;
    const long long end = min(cols, start + chunk);
    float m = SM_NEG_BIG, s = 0.f;
    online_stats<VEC>(x + row * cols, start, end, m, s);
    block_combine(m, s, sh_m, sh_s);
    if (threadIdx.x == 0) stats[b] = make_float2(m, s);
}

// Path 3b: combine the row's chunk statistics, then write this block's chunk of y.
template <int VEC>
__device__ __forceinline__ void chunk_write_impl(const float* __restrict__ x, float* __restrict__ y,
                                                 const float2* __restrict__ stats, long long rows,
                                                 long long cols, long long chunk, int chunks)
{
    __shared__ float sh_m[32];
    __shared__ float sh_s[32];
    const long long b = (long long)gridDim.x - 1 - blockIdx.x;   // reverse order: L2 reuse
    const long long row = b / chunks;
    const long long start = (b - row * chunks) * chunk;
    const long long end = min(cols, start + chunk);
    float m = SM_NEG_BIG, s = 0.f;
    for (int i = threadIdx.x; i < chunks; i += blockDim.x) {
        const float2 p = stats[row * chunks + i];
        sm_combine(m, s, p.x, p.y);
    }
    block_combine(m, s, sh_m, sh_s);
    write_range<VEC>(x + row * cols, y + row * cols, start, end, m, 1.0f / s);
}

// ---------------------------------------------------------------------------------------------
// Entry points (plain C names for RawModule.get_function).

#define SOFTMAX_WARP(VEC, N)                                                                    \
    extern "C" __global__ void __launch_bounds__(256)                                           \
    softmax_warp_v##VEC##_n##N(const float* __restrict__ x, float* __restrict__ y,             \
                                long long rows, long long cols, int log2g)                      \
    {                                                                                           \
        softmax_warp_impl<VEC, N>(x, y, rows, cols, log2g);                                     \
    }

SOFTMAX_WARP(4, 1)
SOFTMAX_WARP(4, 2)
SOFTMAX_WARP(4, 4)
SOFTMAX_WARP(4, 8)
SOFTMAX_WARP(1, 1)
SOFTMAX_WARP(1, 2)
SOFTMAX_WARP(1, 4)
SOFTMAX_WARP(1, 8)
SOFTMAX_WARP(1, 16)

#define SOFTMAX_BLOCK(VEC, N)                                                                   \
    extern "C" __global__ void __launch_bounds__(1024)                                          \
    softmax_block_v##VEC##_n##N(const float* __restrict__ x, float* __restrict__ y,            \
                                 long long rows, long long cols)                                \
    {                                                                                           \
        softmax_block_impl<VEC, N>(x, y, rows, cols);                                           \
    }

SOFTMAX_BLOCK(4, 4)
SOFTMAX_BLOCK(4, 8)
SOFTMAX_BLOCK(1, 16)
SOFTMAX_BLOCK(1, 32)

extern "C" __global__ void __launch_bounds__(512)
softmax_chunk_stats_v4(const float* __restrict__ x, float2* __restrict__ stats,
                       long long rows, long long cols, long long chunk, int chunks)
{
    chunk_stats_impl<4>(x, stats, rows, cols, chunk, chunks);
}

extern "C" __global__ void __launch_bounds__(512)
softmax_chunk_stats_v1(const float* __restrict__ x, float2* __restrict__ stats,
                       long long rows, long long cols, long long chunk, int chunks)
{
    chunk_stats_impl<1>(x, stats, rows, cols, chunk, chunks);
}

extern "C" __global__ void __launch_bounds__(512)
softmax_chunk_write_v4(const float* __restrict__ x, float* __restrict__ y, const float2* __restrict__ stats,
                       long long rows, long long cols, long long chunk, int chunks)
{
    chunk_write_impl<4>(x, y, stats, rows, cols, chunk, chunks);
}

extern "C" __global__ void __launch_bounds__(512)
softmax_chunk_write_v1(const float* __restrict__ x, float* __restrict__ y, const float2* __restrict__ stats,
                       long long rows, long long cols, long long chunk, int chunks)
{
    chunk_write_impl<1>(x, y, stats, rows, cols, chunk, chunks);
}

// Generic one-block-per-row softmax for any rows, cols and alignment (blockDim.x a multiple of
// 32, at most 1024): online statistics over the row, then a second pass that writes y.
extern "C" __global__ void __launch_bounds__(1024)
softmax_kernel(const float* __restrict__ x, float* __restrict__ y, long long rows, long long cols)
{
    __shared__ float sh_m[32];
    __shared__ float sh_s[32];
    const bool vec = (cols % 4 == 0) &&
        ((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y)) & 15ull) == 0;
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* __restrict__ xr = x + row * cols;
        float* __restrict__ yr = y + row * cols;
        float m = SM_NEG_BIG, s = 0.f;
        if (vec) online_stats<4>(xr, 0, cols, m, s);
        else     online_stats<1>(xr, 0, cols, m, s);
        block_combine(m, s, sh_m, sh_s);
        const float inv = 1.0f / s;
        if (vec) write_range<4>(xr, yr, 0, cols, m, inv);
        else     write_range<1>(xr, yr, 0, cols, m, inv);
        __syncthreads();   // sh_m/sh_s are reused by the next row
    }
}
