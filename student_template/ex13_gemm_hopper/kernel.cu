// ex13_gemm_hopper -- student template (stub). Given: the wgmma instruction wrapper (its 128
// accumulator operands), the accumulator fence, Pack<T>, the padding kernel and the launch
// interface. Yours: the mbarrier and TMA wrappers, the wgmma descriptor, the tile order and the
// body of gemm_hopper_body (README.md, hints in order).
//
// C = A B^T: A (M x K) and B (N x K) both row-major ("TN": both operands K-major), float16 or
// bfloat16 in, fp32 accumulation, C (M x N, row-major) written in the inputs' type.
//
// Needs sm_90a (wgmma, setmaxnreg): compiled for anything else, the kernels only trap (the body is
// under __CUDA_ARCH_FEAT_SM90_ALL, so tests/test_nvcc.py can still build this file for sm_80-sm_90).
//
// Fixed by the launch code (solution.py) and the constants below:
//   CTA tile 128 x 256 x 64 (BM x BN x BK), 384 threads = 3 warpgroups: one producer (TMA), two
//   consumers (wgmma m64n256k16; consumer c owns rows 64c .. 64c + 63 of the tile, 128 fp32
//   accumulators a thread). Dynamic shared memory: 1024 bytes of slack (align the base to 1024),
//   then STAGES A tiles (16 KB each), STAGES B tiles (32 KB each), then 2 * STAGES 8-byte mbarriers.
//   The tensor maps load 64 x 128 (A) and 64 x 256 (B) boxes with 128-byte swizzle; elements
//   outside the tensor are zero-filled and still count in the transaction bytes. The grid is
//   persistent: min(#SMs, #tiles) CTAs, each walking tiles blockIdx.x, + gridDim.x, ...
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

// ---- mbarrier (yours: PTX ISA, "Parallel Synchronization and Communication Instructions:
// mbarrier"; all on 64-bit barriers in shared memory, addressed by their 32-bit shared address) -----
// mbarrier.init with the arrival count.
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count)
{
    // TODO
}
// mbarrier.arrive.expect_tx: arrive once and expect `bytes` more transaction bytes (the TMA's).
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes)
{
    // TODO
}
// mbarrier.arrive: one arrival.
__device__ __forceinline__ void mbar_arrive(unsigned bar)
{
    // TODO
}
// Returns once the phase of parity `parity` has completed (loop on mbarrier.try_wait.parity).
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity)
{
    // TODO
}

// ---- TMA (yours: PTX ISA, "cp.async.bulk.tensor") ------------------------------------------------
// prefetch.tensormap of the descriptor (optional: a hint).
__device__ __forceinline__ void tma_prefetch(const TmaDesc* map)
{
    // TODO
}
// The box at (c0 = column, c1 = row) of `map` into shared memory at dst, completing its bytes on
// the mbarrier bar (the .mbarrier::complete_tx::bytes form; the tensor map's generic address as a
// 64-bit operand).
__device__ __forceinline__ void tma_load_2d(unsigned dst, const TmaDesc* map, unsigned bar, int c0, int c1)
{
    // TODO
}

// ---- wgmma ----------------------------------------------------------------------------------
// Shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"; the header above) of a
// K-major tile that the TMA wrote with 128-byte swizzle, starting at shared address addr (yours:
// hint 2).
__device__ __forceinline__ unsigned long long smem_desc(unsigned addr)
{
    return 0;   // TODO
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

// (tile row tm, tile column tn) of tile t in ex12's grouped order: groups of group_m tile rows
// (the last group may be shorter), each group walked column by column, for L2 reuse.
__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int group_m, int& tm, int& tn)
{
    // TODO
    tm = 0;
    tn = 0;
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
    (void)sa; (void)sb; (void)bars; (void)tma_a; (void)tma_b; (void)C; (void)M; (void)N; (void)k_tiles;
    (void)tiles_m; (void)tiles_n; (void)group_m; (void)vec_store;

    // TODO: the Hopper GEMM (README.md, hints in order).
    //   1. Thread 0 initialises the barriers (full: count 1; empty: one arrival per consumer warp),
    //      then fence.mbarrier_init and __syncthreads().
    //   2. Warpgroup 0 (producer): setmaxnreg.dec 40; one thread loops over this CTA's tiles
    //      (t = blockIdx.x; t += gridDim.x; tile_coords) and K tiles: wait empty[s] (parity
    //      phase ^ 1), mbar_arrive_expect_tx(full[s], H_STAGE_BYTES), tma_load_2d of the A box at
    //      (kt * H_BK, tile row * H_BM) and the B box at (kt * H_BK, tile column * H_BN).
    //   3. Warpgroups 1 and 2 (consumers): setmaxnreg.inc 232; per K tile wait full[s] (parity
    //      phase), wgmma_fence, 4 x Wgmma<T>::run with smem_desc(...) + 2 * kk, commit, wait<1>,
    //      release the previous stage (lane 0 of each warp arrives on empty); acc_fence(d) before
    //      wgmma_fence and after the last wait, so the compiler keeps d where the asm says.
    //   4. Epilogue: the accumulator layout of the PTX ISA figure "WGMMA .m64nNk16 register
    //      fragment layout for accumulator matrix D" (see the header), converted with Pack<T>,
    //      stores guarded by M and N (pairs only when vec_store is nonzero). Then, for speed: with
    //      vec_store == 2 a quad can swap its pairs (__shfl_xor_sync) so each lane stores 16 bytes
    //      (README.md, hint 6).
}

#define H_KERNEL_BODY(T) \
    gemm_hopper_body<T>(&tma_a, &tma_b, C, M, N, k_tiles, tiles_m, tiles_n, group_m, vec_store)
#else
#define H_KERNEL_BODY(T) __trap()   // not sm_90a: wgmma and setmaxnreg do not exist
#endif

// tma_a: A (M x Kp), box 64 x 128; tma_b: B (N x Kp), box 64 x 256 (Kp = K rounded up to 8);
// k_tiles = ceil(Kp / 64); vec_store: 2 = C's rows may be written 8 elements at a time (N % 8 == 0,
// C 16-byte aligned), 1 = two at a time (N even, C 4-byte aligned), 0 = one at a time. Launch: 384
// threads, H_SMEM_BYTES of dynamic shared memory, a grid of at most the number of SMs (persistent).
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
