// ex13_gemm_hopper -- the reference solution (its speed on an H200: exercises/ex13_gemm_hopper/README.md).
//
// C = A B^T: A (M x K) and B (N x K) both row-major ("TN": both operands K-major), float16 or
// bfloat16 in, fp32 accumulation, C (M x N, row-major) written in the inputs' type.
//
// Needs sm_90a (wgmma, setmaxnreg): compiled for anything else, the kernels only trap (the body is
// under __CUDA_ARCH_FEAT_SM90_ALL, so tests/test_nvcc.py can still build this file for sm_80-sm_90).
//
// Design
//   CTA tile 128 x 256 x 64 (BM x BN x BK), 384 threads = 3 warpgroups:
//     warpgroup 0   producer: setmaxnreg.dec to 40 registers; one thread issues the TMA loads
//                   (cp.async.bulk.tensor.2d ... mbarrier::complete_tx::bytes) of one A tile
//                   (128 x 64) and one B tile (256 x 64) per stage;
//     warpgroups 1-2 consumers: setmaxnreg.inc to 232; consumer c computes rows 64c .. 64c + 63 of
//                   the CTA tile, all 256 columns, with wgmma.mma_async m64n256k16 (4 per K tile),
//                   128 fp32 accumulators per thread.
//   Shared memory: STAGES = 4 stages of (A 16 KB + B 32 KB) = 192 KB, plus 2 * STAGES mbarriers.
//   A row of a tile is BK = 64 elements = 128 bytes, exactly one 128-byte swizzle row: the TMA
//   writes the tile with CU_TENSOR_MAP_SWIZZLE_128B and the wgmma descriptors say "128B swizzle",
//   so the two agree on the layout (16-byte chunk j of row r lands at chunk j ^ (r % 8)); every
//   tile starts 1024-byte aligned (one swizzle atom = 8 rows x 128 bytes).
//   Pipeline: full[s] (count 1: the producer's arrive.expect_tx; the TMA's complete_tx bytes finish
//   the phase) and empty[s] (count 8: lane 0 of each consumer warp, once the wgmma that read stage
//   s are complete). The producer waits empty[s] with the opposite parity, so a fresh barrier
//   counts as free.
//   Tails: the TMA box is always 64 x 128 (A) and 64 x 256 (B); elements outside the tensor
//   (rows >= M or N, columns >= K) are zero-filled and still counted in the transaction bytes, so
//   the expect_tx count is constant. The global row stride must be a multiple of 16 bytes:
//   solution.py pads A and B to K rounded up to 8 when K % 8 != 0. Stores of C are guarded.
//   Persistent grid: one CTA per SM, tiles t = blockIdx.x, blockIdx.x + gridDim.x, ... in a
//   grouped order (group_m tile rows walked column by column, as in ex12) for L2 reuse. The
//   producer runs ahead into the next tile while the consumers store this one.
//   Epilogue: straight from the accumulators to C. With N % 8 == 0 and C 16-byte aligned, the 4
//   lanes of a quad (one row, 2 columns of each 8-column slice each) transpose 4 slices at a time
//   with two shuffle rounds, so that each lane stores 16 bytes and the quad 64 contiguous bytes:
//   4x fewer store instructions and whole 32-byte sectors. It took 8192x8192x1024 from 0.78x to
//   1.01x cuBLAS and 4096^3 from 0.91x to 1.02x (benchmarks/RESULTS.md, twenty-third session);
//   the consumers' time outside the mainloop is what a short K exposes.
//
// References (PTX ISA 8.x, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions"):
//   * "Matrix Descriptor Format" (docs.nvidia.com/cuda/parallel-thread-execution, anchor
//     #asynchronous-warpgroup-level-matrix-shared-memory-layout-matrix-descriptor): the 64-bit
//     descriptor: bits 0-13 start address >> 4, bits 16-29 leading dimension byte offset >> 4,
//     bits 32-45 stride dimension byte offset >> 4, bits 49-51 matrix base offset, bits 62-63
//     swizzle mode (0 none, 1 128B, 2 64B, 3 32B).
//   * Figure "WGMMA .m64nNk16 register fragment layout for accumulator matrix D": warp w of the
//     warpgroup owns rows 16w .. 16w + 15; lane l holds, for each 8-column slice j, d[4j + 0..1] at
//     row 16w + l/4, columns 8j + 2(l%4) + 0..1, and d[4j + 2..3] at row 16w + l/4 + 8, same columns.

#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define H_BM 128
#define H_BN 256
#define H_BK 64
#define H_STAGES 4
#define H_THREADS 384
#define H_A_BYTES (H_BM * H_BK * 2)                 // 16384
#define H_B_BYTES (H_BN * H_BK * 2)                 // 32768
#define H_STAGE_BYTES (H_A_BYTES + H_B_BYTES)       // 49152: the expect_tx count of one stage
// dynamic shared memory: 1024 bytes of slack to align the base to 1024, the stages, the barriers
#define H_SMEM_BYTES (1024 + H_STAGES * H_STAGE_BYTES + 2 * H_STAGES * 8)

// A CUtensorMap (cuda.h) is 128 opaque bytes, 64-byte aligned; NVRTC has no cuda.h, so this is
// its stand-in. solution.py encodes it with cuTensorMapEncodeTiled and passes it by value.
struct __align__(64) TmaDesc {
    unsigned long long opaque[16];
};

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)

__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ---- mbarrier -------------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(unsigned bar, unsigned parity)
{
    unsigned done;
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n"
                 "}\n" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done != 0;
}
// Returns once the phase of parity `parity` has completed (try_wait suspends for a while itself).
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity)
{
    while (!mbar_try_wait(bar, parity)) {
    }
}

// ---- TMA ------------------------------------------------------------------------------------
__device__ __forceinline__ void tma_prefetch(const TmaDesc* map)
{
    asm volatile("prefetch.tensormap [%0];\n" :: "l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}
// The box at (c0 = column, c1 = row) of `map` into shared memory at dst; completes tx bytes on bar.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const TmaDesc* map, unsigned bar, int c0, int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3, %4}], [%2];\n"
                 :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1)
                 : "memory");
}

// ---- wgmma ----------------------------------------------------------------------------------
// Shared-memory matrix descriptor of a K-major tile written by the TMA with 128-byte swizzle
// (PTX ISA, "Matrix Descriptor Format"): start address >> 4 in bits 0-13; leading byte offset
// (bits 16-29) is not used for a swizzled K-major operand whose K extent (16 elements = 32 bytes)
// fits in one swizzle row, set to 1 (16 bytes) by convention; stride byte offset 1024 >> 4 in
// bits 32-45: the distance between 8-row groups (8 rows x 128 bytes); base offset 0 (bits 49-51:
// every tile is 1024-byte aligned); swizzle mode 1 = 128B in bits 62-63.
__device__ __forceinline__ unsigned long long smem_desc(unsigned addr)
{
    return static_cast<unsigned long long>((addr & 0x3FFFF) >> 4)
         | (1ull << 16)
         | (static_cast<unsigned long long>(1024 >> 4) << 32)
         | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory");
}
// Pins every accumulator register to this point of the (volatile asm) instruction order, so the
// compiler cannot move a read of d (the epilogue) above wgmma.wait_group, nor a write below the
// wgmma that follows: the asm statements of wgmma say nothing about their asynchrony.
__device__ __forceinline__ void acc_fence(float (&d)[128])
{
#pragma unroll
    for (int i = 0; i < 128; ++i)
        asm volatile("" : "+f"(d[i]) :: "memory");
}

#define H_ACC8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
                  "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define H_ACC128 H_ACC8(0), H_ACC8(8), H_ACC8(16), H_ACC8(24), H_ACC8(32), H_ACC8(40), H_ACC8(48), \
                 H_ACC8(56), H_ACC8(64), H_ACC8(72), H_ACC8(80), H_ACC8(88), H_ACC8(96), H_ACC8(104), \
                 H_ACC8(112), H_ACC8(120)
#define H_REGS128                                                                   \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "       \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "    \
    "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "     \
    "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, "     \
    "%61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, "     \
    "%76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, "     \
    "%91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, "    \
    "%105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, " \
    "%118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"

// D (64 x 256, fp32, in d) = A (64 x 16) B^T (16 x 256) + (accumulate ? D : 0); A and B from
// shared memory through descriptors, both K-major (imm-trans-a = imm-trans-b = 0).
template <typename T> struct Wgmma;
template <> struct Wgmma<__half> {
    static __device__ __forceinline__ void run(float (&d)[128], unsigned long long da, unsigned long long db,
                                               int accumulate)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 " H_REGS128
                     ", %128, %129, p, 1, 1, 0, 0;\n}\n"
                     : H_ACC128 : "l"(da), "l"(db), "r"(accumulate));
    }
};
template <> struct Wgmma<__nv_bfloat16> {
    static __device__ __forceinline__ void run(float (&d)[128], unsigned long long da, unsigned long long db,
                                               int accumulate)
    {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 " H_REGS128
                     ", %128, %129, p, 1, 1, 0, 0;\n}\n"
                     : H_ACC128 : "l"(da), "l"(db), "r"(accumulate));
    }
};

template <typename T> struct Pack;
template <> struct Pack<__half> {
    static __device__ __forceinline__ __half2 two(float a, float b) { return __floats2half2_rn(a, b); }
    static __device__ __forceinline__ __half one(float a) { return __float2half_rn(a); }
    using T2 = __half2;
};
template <> struct Pack<__nv_bfloat16> {
    static __device__ __forceinline__ __nv_bfloat162 two(float a, float b) { return __floats2bfloat162_rn(a, b); }
    static __device__ __forceinline__ __nv_bfloat16 one(float a) { return __float2bfloat16_rn(a); }
    using T2 = __nv_bfloat162;
};

// Tile t of the grouped order: groups of group_m tile rows, walked column by column (the same
// formula as _tile_coords in solution.py, which tests/test_ex13_host.py replays).
__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int group_m, int& tm, int& tn)
{
    const int width = group_m * tiles_n;
    const int first_m = (t / width) * group_m;
    const int gsz = min(tiles_m - first_m, group_m);
    tm = first_m + (t % width) % gsz;
    tn = (t % width) / gsz;
}

template <typename T>
__device__ __forceinline__ void gemm_hopper_body(const TmaDesc* tma_a, const TmaDesc* tma_b, T* __restrict__ C,
                                                 int M, int N, int k_tiles, int tiles_m, int tiles_n, int group_m,
                                                 int vec_store)
{
    extern __shared__ unsigned char smem_raw[];
    const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u;   // 1024-aligned: swizzle atoms
    const unsigned sa = base;                                       // STAGES A tiles
    const unsigned sb = base + H_STAGES * H_A_BYTES;                // STAGES B tiles
    const unsigned bars = sb + H_STAGES * H_B_BYTES;                // full[STAGES], empty[STAGES]
    const int num_tiles = tiles_m * tiles_n;
    const int wg = threadIdx.x / 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < H_STAGES; ++s) {
            mbar_init(bars + 8 * s, 1);                          // full: the producer's arrive
            mbar_init(bars + 8 * (H_STAGES + s), 8);             // empty: 8 consumer warps
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {
        // ---- producer warpgroup -----------------------------------------------------------
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (threadIdx.x == 0) {
            tma_prefetch(tma_a);
            tma_prefetch(tma_b);
            int s = 0;
            unsigned phase = 0;
            for (int t = blockIdx.x; t < num_tiles; t += gridDim.x) {
                int tm, tn;
                tile_coords(t, tiles_m, tiles_n, group_m, tm, tn);
                for (int kt = 0; kt < k_tiles; ++kt) {
                    mbar_wait(bars + 8 * (H_STAGES + s), phase ^ 1);    // stage s free
                    const unsigned full = bars + 8 * s;
                    mbar_arrive_expect_tx(full, H_STAGE_BYTES);
                    tma_load_2d(sa + s * H_A_BYTES, tma_a, full, kt * H_BK, tm * H_BM);
                    tma_load_2d(sb + s * H_B_BYTES, tma_b, full, kt * H_BK, tn * H_BN);
                    if (++s == H_STAGES) {
                        s = 0;
                        phase ^= 1;
                    }
                }
            }
        }
    } else {
        // ---- consumer warpgroups ------------------------------------------------------------
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
        const int c = wg - 1;                                   // rows 64c .. 64c + 63 of the tile
        const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
        float d[128];
#pragma unroll
        for (int i = 0; i < 128; ++i)
            d[i] = 0.f;
        int s = 0;
        unsigned phase = 0;
        for (int t = blockIdx.x; t < num_tiles; t += gridDim.x) {
            int tm, tn;
            tile_coords(t, tiles_m, tiles_n, group_m, tm, tn);
            int prev = 0;
            for (int kt = 0; kt < k_tiles; ++kt) {
                mbar_wait(bars + 8 * s, phase);                  // stage s loaded
                const unsigned long long da = smem_desc(sa + s * H_A_BYTES + c * 64 * 128);
                const unsigned long long db = smem_desc(sb + s * H_B_BYTES);
                acc_fence(d);
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < H_BK / 16; ++kk)          // +32 bytes = +2 in the address field
                    Wgmma<T>::run(d, da + 2 * kk, db + 2 * kk, (kt | kk) != 0);
                wgmma_commit();
                wgmma_wait<1>();                                  // the previous K tile's wgmma done
                if (kt > 0 && lane == 0)
                    mbar_arrive(bars + 8 * (H_STAGES + prev));    // ... so its stage is free
                prev = s;
                if (++s == H_STAGES) {
                    s = 0;
                    phase ^= 1;
                }
            }
            wgmma_wait<0>();
            acc_fence(d);
            if (lane == 0)
                mbar_arrive(bars + 8 * (H_STAGES + prev));

            // Epilogue: the accumulator fragment layout (see the header) to C, guarded.
            const int row0 = tm * H_BM + c * 64 + warp * 16 + lane / 4;
            const int col0 = tn * H_BN + 2 * (lane % 4);
            if (vec_store == 2) {
                // 16-byte stores: lane t of a quad holds 2 columns of each 8-column slice; for 4
                // slices at a time the quad transposes its 4 x 4 half2 (two shuffle rounds), so
                // lane t holds all 8 columns of slice 4q + t and the quad writes 64 contiguous
                // bytes of its row (4x fewer store instructions, whole 32-byte sectors).
                const int t4 = lane % 4;
                const bool up = (t4 & 2) != 0, odd = (t4 & 1) != 0;
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int row = row0 + 8 * h;
                    T* crow = C + static_cast<size_t>(row) * N;
#pragma unroll
                    for (int q = 0; q < 8; ++q) {
                        unsigned a[4];
#pragma unroll
                        for (int jj = 0; jj < 4; ++jj) {
                            const int j = 4 * q + jj;
                            const typename Pack<T>::T2 p2 = Pack<T>::two(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
                            a[jj] = *reinterpret_cast<const unsigned*>(&p2);
                        }
                        // round 1: lanes t, t ^ 2 swap their off-diagonal 2 x 2 blocks
                        unsigned r0 = __shfl_xor_sync(0xffffffffu, up ? a[0] : a[2], 2);
                        unsigned r1 = __shfl_xor_sync(0xffffffffu, up ? a[1] : a[3], 2);
                        if (up) { a[0] = r0; a[1] = r1; } else { a[2] = r0; a[3] = r1; }
                        // round 2: lanes t, t ^ 1 transpose within each 2 x 2 block
                        r0 = __shfl_xor_sync(0xffffffffu, odd ? a[0] : a[1], 1);
                        r1 = __shfl_xor_sync(0xffffffffu, odd ? a[2] : a[3], 1);
                        if (odd) { a[0] = r0; a[2] = r1; } else { a[1] = r0; a[3] = r1; }
                        const int col = tn * H_BN + 32 * q + 8 * t4;    // N % 8 == 0: all 8 in or out
                        if (row < M && col < N)
                            *reinterpret_cast<uint4*>(crow + col) = make_uint4(a[0], a[1], a[2], a[3]);
                    }
                }
                continue;
            }
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = row0 + 8 * h;
                if (row >= M)
                    continue;
                T* crow = C + static_cast<size_t>(row) * N;
#pragma unroll
                for (int j = 0; j < 32; ++j) {
                    const int col = col0 + 8 * j;
                    const float v0 = d[4 * j + 2 * h], v1 = d[4 * j + 2 * h + 1];
                    if (vec_store && col + 1 < N) {
                        *reinterpret_cast<typename Pack<T>::T2*>(crow + col) = Pack<T>::two(v0, v1);
                    } else {
                        if (col < N)
                            crow[col] = Pack<T>::one(v0);
                        if (col + 1 < N)
                            crow[col + 1] = Pack<T>::one(v1);
                    }
                }
            }
        }
    }
}

#define H_KERNEL_BODY(T) \
    gemm_hopper_body<T>(&tma_a, &tma_b, C, M, N, k_tiles, tiles_m, tiles_n, group_m, vec_store)
#else
#define H_KERNEL_BODY(T) __trap()   // not sm_90a: wgmma and setmaxnreg do not exist
#endif

// tma_a: A (M x Kp), box 64 x 128; tma_b: B (N x Kp), box 64 x 256 (Kp = K rounded up to 8);
// k_tiles = ceil(Kp / 64); vec_store: 2 = C's rows may be written 8 elements at a time (N % 8 == 0,
// C 16-byte aligned), 1 = two at a time (N even, C 4-byte aligned), 0 = one at a time.
// Launch: 384 threads, H_SMEM_BYTES of dynamic shared memory, a grid of at most the number of SMs
// (persistent).
extern "C" __global__ void __launch_bounds__(H_THREADS, 1)
gemm_hopper_f16(const __grid_constant__ TmaDesc tma_a, const __grid_constant__ TmaDesc tma_b, __half* C,
                int M, int N, int k_tiles, int tiles_m, int tiles_n, int group_m, int vec_store)
{
    H_KERNEL_BODY(__half);
}

extern "C" __global__ void __launch_bounds__(H_THREADS, 1)
gemm_hopper_bf16(const __grid_constant__ TmaDesc tma_a, const __grid_constant__ TmaDesc tma_b, __nv_bfloat16* C,
                 int M, int N, int k_tiles, int tiles_m, int tiles_n, int group_m, int vec_store)
{
    H_KERNEL_BODY(__nv_bfloat16);
}

// Zero-padded copy for K % 8 != 0 (or a misaligned input): dst (rows x cols_p) = src (rows x
// cols), the columns cols .. cols_p - 1 zero. 16-bit elements (float16 or bfloat16 bits).
extern "C" __global__ void pad_rows_u16(const unsigned short* __restrict__ src, unsigned short* __restrict__ dst,
                                        int rows, int cols, int cols_p)
{
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        const unsigned short* s = src + static_cast<size_t>(r) * cols;
        unsigned short* o = dst + static_cast<size_t>(r) * cols_p;
        for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < cols_p; k += gridDim.x * blockDim.x)
            o[k] = k < cols ? s[k] : 0;
    }
}
