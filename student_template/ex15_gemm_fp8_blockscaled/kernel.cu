// ex15_gemm_fp8_blockscaled -- student template (stub). Given: the FP8 wgmma instruction wrapper
// (its 64 accumulator operands), the accumulator fence, the bfloat16 conversion and the launch
// interface. Yours: the mbarrier and TMA wrappers, the wgmma descriptor, the tile order and the
// body of gemm_fp8_body (README.md, hints in order).
//
// D = sum over k-blocks kb of sa[m, kb] * sb[n / 128, kb] * (A[m, kb-block] . B[n, kb-block]):
// A (M x K) and B (N x K) FP8 e4m3 bits, both row-major ("TN": both operands K-major); sa (M x
// K/128) float32, one scale per 1 x 128 block of A; sb (ceil(N/128) x K/128) float32, one per
// 128 x 128 block of B; D (M x N, row-major) bfloat16. K is a multiple of 128.
//
// Needs sm_90a (wgmma, setmaxnreg): compiled for anything else, the kernel only traps (the body is
// under __CUDA_ARCH_FEAT_SM90_ALL, so tests/test_nvcc.py can still build this file for sm_80-sm_90).
//
// Fixed by the launch code (solution.py) and the constants below:
//   CTA tile 128 x 128 x 128 (BM x BN x BK; BK = 128 bytes = one swizzle row = one scale block),
//   384 threads = 3 warpgroups: one producer (TMA), two consumers (wgmma m64n128k32 e4m3; consumer
//   c owns rows 64c .. 64c + 63 of the tile, H_ACC = 64 fp32 accumulators a thread per set).
//   Dynamic shared memory: 1024 bytes of slack (align the base to 1024), then STAGES A tiles
//   (16 KB each), STAGES B tiles (16 KB each), then 2 * STAGES 8-byte mbarriers. The tensor maps
//   load 128 x 128-byte boxes of A and B with 128-byte swizzle; rows outside the tensor are
//   zero-filled and still count in the transaction bytes. The scales are plain global pointers.
//   The grid is persistent: min(#SMs, #tiles) CTAs, each walking tiles blockIdx.x, + gridDim.x, ...
//
// References (PTX ISA 8.x, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions"):
//   * "Matrix Descriptor Format" (docs.nvidia.com/cuda/parallel-thread-execution, anchor
//     #asynchronous-warpgroup-level-matrix-shared-memory-layout-matrix-descriptor): the 64-bit
//     descriptor: bits 0-13 start address >> 4, bits 16-29 leading dimension byte offset >> 4,
//     bits 32-45 stride dimension byte offset >> 4, bits 49-51 matrix base offset, bits 62-63
//     swizzle mode (0 none, 1 128B, 2 64B, 3 32B).
//   * wgmma.mma_async with .e4m3 / .e5m2 operands: "d, a-desc, b-desc, scale-d, imm-scale-a,
//     imm-scale-b", no transpose immediates (FP8 operands must both be K-major); k = 32 elements
//     = 32 bytes per instruction.
//   * Figure "WGMMA .m64nNk32 register fragment layout for accumulator matrix D": warp w of the
//     warpgroup owns rows 16w .. 16w + 15; lane l holds, for each 8-column slice j, d[4j + 0..1] at
//     row 16w + l/4, columns 8j + 2(l%4) + 0..1, and d[4j + 2..3] at row 16w + l/4 + 8, same columns.

#include <cuda_bf16.h>

#define H_BM 128
#define H_BN 128
#define H_BK 128                                    // e4m3 elements = bytes: one swizzle row, one scale block
#define H_STAGES 6
#define H_THREADS 384
#define H_ACC 64                                    // fp32 accumulators per consumer thread per set: 64 x BN / 128
#define H_A_BYTES (H_BM * H_BK)                     // 16384
#define H_B_BYTES (H_BN * H_BK)                     // 16384
#define H_STAGE_BYTES (H_A_BYTES + H_B_BYTES)       // 32768: the expect_tx count of one stage
// dynamic shared memory: 1024 bytes of slack to align the base to 1024, the stages, the barriers
#define H_SMEM_BYTES (1024 + H_STAGES * H_STAGE_BYTES + 2 * H_STAGES * 8)

// A CUtensorMap (cuda.h) is 128 opaque bytes, 64-byte aligned; NVRTC has no cuda.h, so this is
// its stand-in. solution.py encodes it with grader.kernel.tensor_map and passes it by value.
struct __align__(64) TmaDesc {
    unsigned long long opaque[16];
};

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)

__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ---- mbarrier (yours, as in ex13: PTX ISA, "Parallel Synchronization and Communication
// Instructions: mbarrier"; 64-bit barriers in shared memory, addressed by their 32-bit shared address)
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

// ---- TMA (yours, as in ex13: PTX ISA, "cp.async.bulk.tensor") -----------------------------------
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
// what, if anything, changes from ex13's when an element is one byte?).
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
// compiler cannot move a read of d above wgmma.wait_group, nor a write below the wgmma that
// follows: the asm statements of wgmma say nothing about their asynchrony.
__device__ __forceinline__ void acc_fence(float (&d)[H_ACC])
{
#pragma unroll
    for (int i = 0; i < H_ACC; ++i)
        asm volatile("" : "+f"(d[i]) :: "memory");
}

#define H_ACC8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
                  "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define H_ACC64 H_ACC8(0), H_ACC8(8), H_ACC8(16), H_ACC8(24), H_ACC8(32), H_ACC8(40), H_ACC8(48), H_ACC8(56)
#define H_REGS64                                                                    \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "       \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "    \
    "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "     \
    "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, "     \
    "%61, %62, %63}"

// D (64 x 128, fp32, in d) = A (64 x 32, e4m3) B^T (32 x 128, e4m3) + (accumulate ? D : 0); A and
// B from shared memory through descriptors, both K-major; imm-scale-a = imm-scale-b = 1.
__device__ __forceinline__ void wgmma_e4m3(float (&d)[H_ACC], unsigned long long da, unsigned long long db,
                                           int accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " H_REGS64
                 ", %64, %65, p, 1, 1;\n}\n"
                 : H_ACC64 : "l"(da), "l"(db), "r"(accumulate));
}

// fp32 to bfloat16, round to nearest even: two adjacent columns as one 4-byte pair, or one alone.
__device__ __forceinline__ __nv_bfloat162 to_bf16x2(float a, float b) { return __floats2bfloat162_rn(a, b); }
__device__ __forceinline__ __nv_bfloat16 to_bf16(float a) { return __float2bfloat16_rn(a); }

// (tile row tm, tile column tn) of tile t in ex12's grouped order: groups of group_m tile rows
// (the last group may be shorter), each group walked column by column, for L2 reuse.
__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int group_m, int& tm, int& tn)
{
    // TODO
    tm = 0;
    tn = 0;
}

__device__ __forceinline__ void gemm_fp8_body(const TmaDesc* tma_a, const TmaDesc* tma_b,
                                              const float* __restrict__ scale_a, const float* __restrict__ scale_b,
                                              __nv_bfloat16* __restrict__ D, int M, int N, int k_blocks,
                                              int tiles_m, int tiles_n, int group_m, int vec_store)
{
    extern __shared__ unsigned char smem_raw[];
    const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u;   // 1024-aligned: swizzle atoms
    const unsigned a_tiles = base;                                  // STAGES A tiles
    const unsigned b_tiles = base + H_STAGES * H_A_BYTES;           // STAGES B tiles
    const unsigned bars = b_tiles + H_STAGES * H_B_BYTES;           // full[STAGES], empty[STAGES]
    (void)a_tiles; (void)b_tiles; (void)bars; (void)tma_a; (void)tma_b; (void)scale_a; (void)scale_b; (void)D;
    (void)M; (void)N; (void)k_blocks; (void)tiles_m; (void)tiles_n; (void)group_m; (void)vec_store;

    // TODO: the block-scaled FP8 GEMM (README.md, hints in order). ex13's pipeline, one stage per
    // k-block, plus the promotion:
    //   1. Thread 0 initialises the barriers (full: count 1; empty: one arrival per consumer warp),
    //      then fence.mbarrier_init and __syncthreads().
    //   2. Warpgroup 0 (producer): setmaxnreg.dec 40; one thread loops over this CTA's tiles
    //      (t = blockIdx.x; t += gridDim.x; tile_coords) and k-blocks: wait empty[s] (parity
    //      phase ^ 1), mbar_arrive_expect_tx(full[s], H_STAGE_BYTES), tma_load_2d of the A box at
    //      (kb * H_BK, tile row * H_BM) and the B box at (kb * H_BK, tile column * H_BN).
    //   3. Warpgroups 1 and 2 (consumers): setmaxnreg.inc 232; two accumulator sets, acc (the
    //      tile's fp32 sum) and blk (one k-block). Per k-block: load this thread's scales (sa of its
    //      two rows, sb of the tile's column block), wait full[s] (parity phase), wgmma_fence,
    //      4 x wgmma_e4m3 into blk with smem_desc(...) + 2 * kk (the first with accumulate = 0),
    //      commit, wait<0>, release stage s (lane 0 of each warp arrives on empty), then promote:
    //      acc += sa * sb * blk in fp32. acc_fence(blk) before wgmma_fence and after the wait.
    //   4. Epilogue: the accumulator layout (see the header) to bfloat16 (to_bf16x2 / to_bf16),
    //      stores guarded by M and N (pairs only when vec_store is nonzero). Then, for speed: with
    //      vec_store == 2 a quad can swap its pairs (__shfl_xor_sync) so each lane stores 16 bytes
    //      (README.md, hint 6).
}

#define H_KERNEL_BODY \
    gemm_fp8_body(&tma_a, &tma_b, scale_a, scale_b, D, M, N, k_blocks, tiles_m, tiles_n, group_m, vec_store)
#else
#define H_KERNEL_BODY __trap()   // not sm_90a: wgmma and setmaxnreg do not exist
#endif

// tma_a: A (M x K) e4m3 bytes, box 128 x 128; tma_b: B (N x K), box 128 x 128; scale_a (M x
// k_blocks), scale_b (ceil(N / 128) x k_blocks) float32; k_blocks = K / 128; vec_store: 2 = D's
// rows may be written 8 elements at a time (N % 8 == 0, D 16-byte aligned), 1 = two at a time (N
// even, D 4-byte aligned), 0 = one at a time. Launch: 384 threads, H_SMEM_BYTES of dynamic shared
// memory, a grid of at most the number of SMs (persistent).
extern "C" __global__ void __launch_bounds__(H_THREADS, 1)
gemm_fp8_blockscaled(const __grid_constant__ TmaDesc tma_a, const __grid_constant__ TmaDesc tma_b,
                     const float* __restrict__ scale_a, const float* __restrict__ scale_b, __nv_bfloat16* D,
                     int M, int N, int k_blocks, int tiles_m, int tiles_n, int group_m, int vec_store)
{
    H_KERNEL_BODY;
}
