// ex11_gemm_regtile -- reference solution: C = A @ B (float32, row-major), register-tiled SGEMM.
// Any M, N, K >= 1.
//
// Block tile 128 x 128, K step BK (8 or 16); every thread holds an 8 x TN block of C in registers.
// Thread layouts (template parameters NT, LANES_M, TN_S):
//   * default (solution.py _VEC_KERNEL = "k8_async") and the scalar kernel: 256 threads = 8 warps
//     arranged 4 x 2, warp tile 32 x 64, lanes 4 x 8, each thread 8 x 8 outputs (rows r..r+3,
//     r+16..r+19; columns c..c+3, c+32..c+35): per k, 4 float4 shared-memory reads for 64 FMAs;
//   * "w_k16_async" / "w_k8_async": 128 threads = 4 warps arranged 2 x 2, warp tile 64 x 64, lanes
//     8 x 4, each thread 8 x 16 outputs (rows r..r+3, r+32..r+35; columns c + {0, 16, 32, 48} +
//     0..3): 6 float4 reads for 128 FMAs (the shape cuBLAS's FFMA kernels use). 1-5 % slower than
//     the default on an H200 (benchmarks/bench_gemm.py --tune, RESULTS.md).
// The levels of reuse: every A/B element loaded from device memory is used 128 times from shared
// memory; a warp's shared-memory reads per k are a few contiguous 64/128-byte runs (broadcast to
// several lanes, no bank conflicts); each shared-memory value read is used for 8 or 16 FMAs.
// A is stored TRANSPOSED in shared memory (As[k][m], rows padded by 4 floats so the transposing
// stores hit 32 different banks), so that a thread's 4 consecutive rows are one float4.
//
// Latency hiding (what took the 2026-11-30 design, the same tiles without 1-3, from 0.80x to
// 0.89-0.90x cuBLAS FP32 at 4096^3 and 8192^3 on the H200; its SASS was 92 % FFMA in the k-loop, each
// trip starting with four LDS.128 whose results the next FFMAs needed at once):
//  1. register double buffering of the fragments: while the FFMAs of step k run, the A and B
//     fragments of step k + 1 are already being read from shared memory (fa/fb[2][...]); the k-loop
//     is fully unrolled, so every index into fa/fb is a compile-time constant (registers, not
//     local memory);
//  2. the next tile is stored to the other shared-memory buffer and the barrier is taken before
//     the LAST k-step of a tile, so the first fragments of the next tile are read while that last
//     step's FFMAs run: no k-step waits on a shared-memory read it just issued;
//  3. ASYNC_B: B's tile rows are contiguous in device memory and land in shared memory untransposed,
//     so they go by cp.async (16 bytes, zero-filled past N and K: src-size 0) straight into the
//     other buffer, with no staging registers; only A (transposed on its way in) passes through
//     registers.
// Why one barrier per tile is enough: in tile t the block computes on buffer X; the loads of tile
// t + 1 go to Y = X ^ 1. Y was last READ by fragments loaded before tile t - 1's barrier (step 2
// puts every shared-memory read of a tile before its barrier), and every thread has passed that
// barrier before any thread starts tile t, so Y is free when tile t's cp.async and stores write it.
//
// VEC = true  when K % 4 == 0 and N % 4 == 0 and the bases are 16-byte aligned (every row of A, B
//             and C starts 16-byte aligned): 16-byte global loads and stores, each float4 either
//             fully inside or fully outside;
// VEC = false any shape (256-thread layout, BK = 8, no cp.async): element-wise guarded scalar
//             loads and stores.
// Out-of-range elements of edge tiles are zero-filled, stores are guarded. Tile order: groups of
// `group_m` tile rows are walked column by column (L2 reuse of B); the grid is 1-D. Offsets that
// can exceed 2^31 are 64-bit.

#define R_BM 128
#define R_BN 128
#define R_APAD 4

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, int src_bytes)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(s), "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

template <int BK, bool VEC, int NT, int LANES_M, int TN_S, bool ASYNC_B>
__device__ __forceinline__ void gemm_regtile_body(const float* __restrict__ A, const float* __restrict__ B,
                                                   float* __restrict__ C, int M, int N, long long K,
                                                   int tiles_m, int tiles_n, int group_m)
{
    static_assert(!ASYNC_B || VEC, "cp.async copies 16 bytes: needs the vector layout");
    constexpr int A_LOADS = R_BM * BK / 4 / NT;   // float4 slots per thread per tile of A
    constexpr int B_LOADS = BK * R_BN / 4 / NT;   // ... and of B
    constexpr int A_K4 = BK / 4;                   // float4 per row of an A tile
    constexpr int B_N4 = R_BN / 4;                 // float4 per row of a B tile
    __shared__ __align__(16) float As[2][BK][R_BM + R_APAD];
    __shared__ __align__(16) float Bs[2][BK][R_BN];

    const int tid = threadIdx.x;
    const int bid = blockIdx.x;                    // grouped tile order (see the header)
    const int width = group_m * tiles_n;
    const int first_m = (bid / width) * group_m;
    const int gsz = min(tiles_m - first_m, group_m);
    const int tile_m = first_m + (bid % width) % gsz;
    const int tile_n = (bid % width) / gsz;
    const int row0 = tile_m * R_BM, col0 = tile_n * R_BN;

    int a_row[A_LOADS], a_k[A_LOADS], b_row[B_LOADS], b_colg[B_LOADS];
    bool a_ok[A_LOADS], b_ok[B_LOADS];
    const float* a_ptr[A_LOADS];
    const float* b_ptr[B_LOADS];
#pragma unroll
    for (int i = 0; i < A_LOADS; ++i) {
        const int idx = tid + i * NT;
        a_row[i] = idx / A_K4;
        a_k[i] = (idx % A_K4) * 4;
        const int r = row0 + a_row[i];
        a_ok[i] = r < M;
        a_ptr[i] = A + (long long)(a_ok[i] ? r : 0) * K + a_k[i];
    }
#pragma unroll
    for (int i = 0; i < B_LOADS; ++i) {
        const int idx = tid + i * NT;
        b_row[i] = idx / B_N4;
        b_colg[i] = col0 + (idx % B_N4) * 4;
        b_ok[i] = b_colg[i] < N;
        b_ptr[i] = B + (long long)b_row[i] * N + (b_ok[i] ? b_colg[i] : 0);
    }
    const long long b_step = (long long)BK * N;

    float4 ra[A_LOADS];
    float4 rb[ASYNC_B ? 1 : B_LOADS];
    auto load_a = [&](int klim) {                  // A tile -> registers (transposed when stored)
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            const float* p = a_ptr[i];
            if (VEC) {
                ra[i] = (a_ok[i] && a_k[i] < klim) ? __ldg(reinterpret_cast<const float4*>(p))
                                                   : make_float4(0.f, 0.f, 0.f, 0.f);
            } else {
                ra[i].x = (a_ok[i] && a_k[i] + 0 < klim) ? __ldg(p + 0) : 0.f;
                ra[i].y = (a_ok[i] && a_k[i] + 1 < klim) ? __ldg(p + 1) : 0.f;
                ra[i].z = (a_ok[i] && a_k[i] + 2 < klim) ? __ldg(p + 2) : 0.f;
                ra[i].w = (a_ok[i] && a_k[i] + 3 < klim) ? __ldg(p + 3) : 0.f;
            }
            a_ptr[i] += BK;
        }
    };
    auto load_b = [&](int klim, int buf) {         // B tile -> registers, or cp.async -> Bs[buf]
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
            const bool k_ok = b_row[i] < klim;
            const float* p = b_ptr[i];
            if constexpr (ASYNC_B) {
                const bool in = k_ok && b_ok[i];
                cp_async16(&Bs[buf][b_row[i]][b_colg[i] - col0], in ? p : B, in ? 16 : 0);
            } else if (VEC) {
                rb[i] = (k_ok && b_ok[i]) ? __ldg(reinterpret_cast<const float4*>(p))
                                          : make_float4(0.f, 0.f, 0.f, 0.f);
            } else {
                rb[i].x = (k_ok && b_colg[i] + 0 < N) ? __ldg(p + 0) : 0.f;
                rb[i].y = (k_ok && b_colg[i] + 1 < N) ? __ldg(p + 1) : 0.f;
                rb[i].z = (k_ok && b_colg[i] + 2 < N) ? __ldg(p + 2) : 0.f;
                rb[i].w = (k_ok && b_colg[i] + 3 < N) ? __ldg(p + 3) : 0.f;
            }
            b_ptr[i] += b_step;
        }
        if constexpr (ASYNC_B) cp_async_commit();
    };
    auto store_tile = [&](int buf) {               // registers -> shared memory (A transposed)
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            As[buf][a_k[i] + 0][a_row[i]] = ra[i].x;
            As[buf][a_k[i] + 1][a_row[i]] = ra[i].y;
            As[buf][a_k[i] + 2][a_row[i]] = ra[i].z;
            As[buf][a_k[i] + 3][a_row[i]] = ra[i].w;
        }
        if constexpr (!ASYNC_B) {
#pragma unroll
            for (int i = 0; i < B_LOADS; ++i)
                *reinterpret_cast<float4*>(&Bs[buf][b_row[i]][b_colg[i] - col0]) = rb[i];
        }
    };

    // Lane (lm, ln) of a warp owns rows tr + {0..3}, tr + RS + {0..3} and columns
    // tc + s * CS + {0..3}, s < TN_S (see the header).
    constexpr int LANES_N = 32 / LANES_M;
    constexpr int TN = 4 * TN_S;
    constexpr int WM = 8 * LANES_M, WN = TN * LANES_N;
    constexpr int WARPS_N = R_BN / WN;
    constexpr int RS = 4 * LANES_M, CS = 4 * LANES_N;
    static_assert((R_BM / WM) * WARPS_N * 32 == NT, "warp layout");
    const int warp = tid >> 5, lane = tid & 31;
    const int tr = (warp / WARPS_N) * WM + (lane / LANES_N) * 4;
    const int tc = (warp % WARPS_N) * WN + (lane % LANES_N) * 4;

    float fa[2][8], fb[2][TN];
    auto load_frag = [&](int buf, int k, int slot) {
        const float4 a0 = *reinterpret_cast<const float4*>(&As[buf][k][tr]);
        const float4 a1 = *reinterpret_cast<const float4*>(&As[buf][k][tr + RS]);
        fa[slot][0] = a0.x; fa[slot][1] = a0.y; fa[slot][2] = a0.z; fa[slot][3] = a0.w;
        fa[slot][4] = a1.x; fa[slot][5] = a1.y; fa[slot][6] = a1.z; fa[slot][7] = a1.w;
#pragma unroll
        for (int s = 0; s < TN_S; ++s) {
            const float4 bv = *reinterpret_cast<const float4*>(&Bs[buf][k][tc + s * CS]);
            fb[slot][4 * s] = bv.x; fb[slot][4 * s + 1] = bv.y; fb[slot][4 * s + 2] = bv.z; fb[slot][4 * s + 3] = bv.w;
        }
    };

    float acc[8][TN];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

    const int tiles_k = (int)((K + BK - 1) / BK);
    auto tile_klim = [&](int t) {
        const long long rem = K - (long long)t * BK;
        return rem >= BK ? BK : (int)rem;
    };

    load_a(tile_klim(0));
    load_b(tile_klim(0), 0);
    store_tile(0);
    if constexpr (ASYNC_B) cp_async_wait_all();
    __syncthreads();
    load_frag(0, 0, 0);

    int buf = 0;
    for (int t = 0; t < tiles_k; ++t) {
        const bool has_next = t + 1 < tiles_k;     // the same in every thread of the block
        if (has_next) {
            const int klim = tile_klim(t + 1);
            load_a(klim);                          // lands during this tile's math
            load_b(klim, buf ^ 1);
        }
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            if (k + 1 < BK) {
                load_frag(buf, k + 1, (k + 1) & 1);
            } else if (has_next) {                 // the last step: next tile in, barrier, its first fragments
                store_tile(buf ^ 1);
                if constexpr (ASYNC_B) cp_async_wait_all();
                __syncthreads();
                load_frag(buf ^ 1, 0, (k + 1) & 1);
            }
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(fa[k & 1][i], fb[k & 1][j], acc[i][j]);
        }
        buf ^= 1;
    }

#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int r = row0 + tr + (i < 4 ? i : RS + i - 4);
        if (r >= M) continue;
        float* crow = C + (long long)r * N;
#pragma unroll
        for (int h = 0; h < TN_S; ++h) {
            const int c = col0 + tc + h * CS;
            if (VEC) {
                if (c < N)
                    *reinterpret_cast<float4*>(crow + c) =
                        make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (c + j < N) crow[c + j] = acc[i][4 * h + j];
            }
        }
    }
}

#define R_ARGS const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, \
               int M, int N, long long K, int tiles_m, int tiles_n, int group_m
#define R_PASS A, B, C, M, N, K, tiles_m, tiles_n, group_m

// The variants compile without spills with nvcc 13.0 for sm_90 (ptxas -v): 128 threads x 8 x 16
// outputs, K step 16 (255 registers) or 8 (253); 256 threads x 8 x 8, K step 8 (124); the scalar
// any-shape kernel (128). (256 x 8 x 8 with K step 16 and the 128-thread kernel without cp.async
// spilled: left out.)
extern "C" __global__ void __launch_bounds__(128, 2) gemm_regtile_w_k16_async(R_ARGS) { gemm_regtile_body<16, true, 128, 8, 4, true>(R_PASS); }
extern "C" __global__ void __launch_bounds__(128, 2) gemm_regtile_w_k8_async(R_ARGS)  { gemm_regtile_body<8, true, 128, 8, 4, true>(R_PASS); }
extern "C" __global__ void __launch_bounds__(256, 2) gemm_regtile_k8_async(R_ARGS)    { gemm_regtile_body<8, true, 256, 4, 2, true>(R_PASS); }
extern "C" __global__ void __launch_bounds__(256, 2) gemm_regtile_k8_v1(R_ARGS)       { gemm_regtile_body<8, false, 256, 4, 2, false>(R_PASS); }
