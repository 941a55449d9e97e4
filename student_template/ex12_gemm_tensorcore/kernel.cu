// ex12_gemm_tensorcore -- your kernel. Read exercises/ex12_gemm_tensorcore/README.md first.
//
// C = A @ B on tensor cores: A (M, K) and B (K, N) row-major float16 or bfloat16, C (M, N)
// float32, accumulation in fp32. solution.py launches 256 threads per 128 x 256 tile of C on a
// 1-D grid, with STAGES * (128 x (BK + 8) + BK x (256 + 8)) elements of DYNAMIC shared memory
// (T_STAGES, T_BK below), and guarantees lda % 8 == 0 and ldb % 8 == 0 (it pads A and B when K
// or N is not a multiple of 8): every row of A and B starts 16-byte aligned, so 16-byte chunks
// (8 elements) never straddle the end of a row.
//
// Given as scaffolding below: inline-PTX wrappers for mma.sync (fp32 accumulators), ldmatrix
// (plain and .trans) and cp.async (16 bytes, zero-fill). The main loop is yours.

#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define T_BM 128
#define T_BN 256
#define T_THREADS 256
#define T_PAD 8                        // elements of padding per shared-memory row

template <typename T> struct Mma;      // D += A * B for one m16n8k16 tile, fp32 accumulators
template <> struct Mma<__half> {
    static __device__ __forceinline__ void run(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
    {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};
template <> struct Mma<__nv_bfloat16> {
    static __device__ __forceinline__ void run(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
    {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

__device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}

// 16 bytes device -> shared; src_bytes = 0 reads nothing and writes 16 zero bytes.
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); }

#define T_BK 32
#define T_STAGES 4

template <typename T>
__device__ __forceinline__ void gemm_tc_body(const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C,
                                             int M, int N, int K, int lda, int ldb, int ldc,
                                             int tiles_m, int tiles_n, int group_m)
{
    // TODO: the tensor-core main loop.
    //   1. Tile (tile_m, tile_n) of this block from blockIdx.x (tiles_m x tiles_n tiles; start
    //      with tile_m = blockIdx.x / tiles_n, tile_n = blockIdx.x % tiles_n; group_m is for
    //      hint 7 in the README).
    //   2. Shared memory: extern __shared__ __align__(16) unsigned char smem_raw[]; T_STAGES
    //      buffers of an A tile (128 rows of T_BK + T_PAD elements) and a B tile (T_BK rows of
    //      T_BN + T_PAD elements). The 8-element padding makes the 8 rows read by one ldmatrix
    //      phase start in different banks (or swizzle the 16-byte chunks instead).
    //   3. Copies: per stage the A tile is 128 * T_BK / 8 16-byte chunks and the B tile
    //      T_BK * T_BN / 8; spread them over the 256 threads with cp_async16 (src_bytes = 0 for a
    //      chunk that starts outside the matrix: it writes zeros, and zeros add nothing), then
    //      cp_async_commit(). Prologue: tiles 0 .. T_STAGES - 2. Each iteration kt:
    //      cp_async_wait<T_STAGES - 2>(); __syncthreads(); copy tile kt + T_STAGES - 1 into the
    //      buffer freed by tile kt - 1; commit (even when there was nothing to copy); compute.
    //   4. Warps: arrange the 8 warps 2 x 4, each owning 64 x 64 of C = 4 x 8 mma tiles of
    //      16 x 8: float acc[4][8][4]. Per 16-wide k step: 4 x ldmatrix_x4 for the A fragments
    //      (lane l gives the address of row l % 16, column (l / 16) * 8 of the 16 x 16 block),
    //      4 x ldmatrix_x4_trans for the B fragments (row k = l % 16, column (l / 16) * 8 of a
    //      16 x 16 block of B: registers 0, 1 are the fragment of the first 8 columns, 2, 3 of
    //      the next 8), then 32 Mma<T>::run.
    //   5. Epilogue: acc[mi][ni][0..1] are row g, columns 2q, 2q + 1 of mma tile (mi, ni), and
    //      acc[mi][ni][2..3] row g + 8, with g = lane / 4, q = lane % 4. Store inside C only
    //      (row < M, column < N; ldc is the row stride of C).
}

#define T_ARGS(T) const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C, \
                  int M, int N, int K, int lda, int ldb, int ldc, int tiles_m, int tiles_n, int group_m
#define T_PASS A, B, C, M, N, K, lda, ldb, ldc, tiles_m, tiles_n, group_m

extern "C" __global__ void __launch_bounds__(T_THREADS, 1) gemm_tc_f16(T_ARGS(__half))
{ gemm_tc_body<__half>(T_PASS); }
extern "C" __global__ void __launch_bounds__(T_THREADS, 1) gemm_tc_bf16(T_ARGS(__nv_bfloat16))
{ gemm_tc_body<__nv_bfloat16>(T_PASS); }

// Data movement, not the GEMM: copy src (rows x cols 16-bit elements, rows packed) into the first
// cols columns of dst (rows x ld, ld >= cols); dst's padding columns are left as they are (zero).
// Threads run along a row (coalesced), blocks over rows; launched by solution.py's _padded.
extern "C" __global__ void pad_rows_u16(const unsigned short* __restrict__ src, unsigned short* __restrict__ dst,
                                        int rows, int cols, int ld)
{
    for (int r = blockIdx.y; r < rows; r += gridDim.y)
        for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += gridDim.x * blockDim.x)
            dst[(long long)r * ld + c] = src[(long long)r * cols + c];
}
