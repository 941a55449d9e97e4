// ex11_gemm_regtile -- reference solution: C = A @ B (float32, row-major), register-tiled SGEMM.
//
// Block tile 128 x 128, K step BK (8 or 16); every thread holds an 8 x TN block of C in registers.
// Two thread layouts (template parameters NT, LANES_M, TN_S):
//   * default (solution.py _VARIANT = "w_", _BK = 16): 128 threads = 4 warps arranged 2 x 2, warp
//     tile 64 x 64, lanes 8 x 4, each thread 8 x 16 outputs (128 accumulators): rows r..r+3 and
//     r+32..r+35, columns c + {0, 16, 32, 48} + 0..3. Per k a thread reads 2 float4 of A and 4 of
//     B from shared memory for 128 FMAs (the same 8 x 16-per-thread shape cuBLAS's FFMA kernels use);
//   * _VARIANT = "": 256 threads = 8 warps arranged 4 x 2, warp tile 32 x 64, lanes 4 x 8, each
//     thread 8 x 8 outputs (rows r..r+3, r+16..r+19; columns c..c+3, c+32..c+35): 4 float4 reads
//     for 64 FMAs. Within 1 % of the default on an H200.
// The levels of reuse: every A/B element loaded from device memory is used 128 times from shared
// memory; a warp's shared-memory reads per k are a few contiguous 64/128-byte runs (broadcast to
// several lanes, no bank conflicts); each shared-memory value read is used for 8 or 16 FMAs.
// A is stored TRANSPOSED in shared memory (As[k][m], rows padded by 4 floats so the transposing
// stores hit 32 different banks), so that a thread's 4 consecutive rows are one float4.
// Double buffering: while the block computes on one shared-memory buffer, the next K tile is
// already loaded from device memory into registers (float4 loads issued before the math) and is
// stored into the other buffer afterwards: one __syncthreads() per K tile.
//
// VEC = true  when K % 4 == 0 and N % 4 == 0 (every row of A and B starts 16-byte aligned):
//             16-byte global loads and stores, each float4 either fully inside or fully outside;
// VEC = false any shape (256-thread layout, BK = 8): element-wise guarded scalar loads and stores.
// Out-of-range elements of edge tiles are zero-filled, stores are guarded: any M, N, K >= 1.
// Tile order: groups of `group_m` tile rows are walked column by column (L2 reuse of B); the grid
// is 1-D. Offsets that can exceed 2^31 are 64-bit.

#define R_BM 128
#define R_BN 128
#define R_APAD 4

template <int BK, bool VEC, int NT, int LANES_M, int TN_S>
__device__ __forceinline__ void gemm_regtile_body(const float* __restrict__ A, const float* __restrict__ B,
                                                  float* __restrict__ C, int M, int N, long long K,
                                                  int tiles_m, int tiles_n, int group_m)
{
    constexpr int A_LOADS = R_BM * BK / 4 / NT;   // float4 per thread per tile of A
    constexpr int B_LOADS = BK * R_BN / 4 / NT;   // ... and of B
    constexpr int A_K4 = BK / 4;                          // float4 per row of an A tile
    constexpr int B_N4 = R_BN / 4;                        // float4 per row of a B tile
    __shared__ __align__(16) float As[2][BK][R_BM + R_APAD];
    __shared__ __align__(16) float Bs[2][BK][R_BN];

    const int tid = threadIdx.x;

    // Grouped tile order: group_m tile rows at a time, walked column by column.
    const int bid = blockIdx.x;
    const int width = group_m * tiles_n;
    const int first_m = (bid / width) * group_m;
    const int gsz = min(tiles_m - first_m, group_m);
    const int tile_m = first_m + (bid % width) % gsz;
    const int tile_n = (bid % width) / gsz;
    const int row0 = tile_m * R_BM, col0 = tile_n * R_BN;

    // Load slots. A: float4 i of this thread is row a_row[i], columns a_k[i] .. +3 of the tile;
    // B: row b_row[i], columns b_col[i] .. +3. The pointers walk along K (A by BK columns, B by
    // BK rows per tile); `klim` (<= BK) is how many columns of the tile lie inside K.
    int a_row[A_LOADS], a_k[A_LOADS], b_row[B_LOADS];
    bool a_ok[A_LOADS], b_ok[B_LOADS];
    const float* a_ptr[A_LOADS];
    const float* b_ptr[B_LOADS];
    int b_colg[B_LOADS];
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

    float4 ra[A_LOADS], rb[B_LOADS];
    // Load the next K tile (its first klim columns are inside K), then advance the pointers.
    auto load_global = [&](int klim) {
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
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
            const bool k_ok = b_row[i] < klim;
            const float* p = b_ptr[i];
            if (VEC) {
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
    };
    auto store_smem = [&](int buf) {
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            As[buf][a_k[i] + 0][a_row[i]] = ra[i].x;
            As[buf][a_k[i] + 1][a_row[i]] = ra[i].y;
            As[buf][a_k[i] + 2][a_row[i]] = ra[i].z;
            As[buf][a_k[i] + 3][a_row[i]] = ra[i].w;
        }
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i)
            *reinterpret_cast<float4*>(&Bs[buf][b_row[i]][(b_colg[i] - col0)]) = rb[i];
    };

    // Warp and lane layout. The lanes of a warp form a LANES_M x LANES_N grid; lane (lm, ln) owns
    // rows tr + {0..3} and tr + RS + {0..3} and columns tc + s * CS + {0..3}, s < TN_S, of C.
    constexpr int LANES_N = 32 / LANES_M;
    constexpr int TN = 4 * TN_S;                      // columns per thread (rows per thread: 8)
    constexpr int WM = 8 * LANES_M, WN = TN * LANES_N; // warp tile
    constexpr int WARPS_N = R_BN / WN;
    constexpr int RS = 4 * LANES_M, CS = 4 * LANES_N;
    static_assert((R_BM / WM) * WARPS_N * 32 == NT, "warp layout");
    const int warp = tid >> 5, lane = tid & 31;
    const int tr = (warp / WARPS_N) * WM + (lane / LANES_N) * 4;
    const int tc = (warp % WARPS_N) * WN + (lane % LANES_N) * 4;

    float acc[8][TN];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

    const int tiles_k = (int)((K + BK - 1) / BK);
    auto tile_klim = [&](int t) {                   // columns of K tile t that lie inside K
        const long long rem = K - (long long)t * BK;
        return rem >= BK ? BK : (int)rem;
    };
    load_global(tile_klim(0));
    store_smem(0);
    __syncthreads();

    int buf = 0;
    for (int t = 0; t < tiles_k; ++t) {
        const bool has_next = t + 1 < tiles_k;
        if (has_next) load_global(tile_klim(t + 1));   // in flight during the math below
#pragma unroll 2     // full unrolling makes ptxas hoist too many loads: 128 registers and spills
        for (int k = 0; k < BK; ++k) {
            const float4 a0 = *reinterpret_cast<const float4*>(&As[buf][k][tr]);
            const float4 a1 = *reinterpret_cast<const float4*>(&As[buf][k][tr + RS]);
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            float b[TN];
#pragma unroll
            for (int s = 0; s < TN_S; ++s) {
                const float4 bv = *reinterpret_cast<const float4*>(&Bs[buf][k][tc + s * CS]);
                b[4 * s] = bv.x; b[4 * s + 1] = bv.y; b[4 * s + 2] = bv.z; b[4 * s + 3] = bv.w;
            }
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (has_next) store_smem(buf ^ 1);
        __syncthreads();
        buf ^= 1;
    }

#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int r = row0 + tr + (i < 4 ? i : RS + i - 4);  // i = 4..7 -> rows tr + RS ..
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

// 256 threads, 8 x 8 outputs per thread (warp tile 32 x 64)
extern "C" __global__ void __launch_bounds__(256, 2) gemm_regtile_k8_v4(R_ARGS)  { gemm_regtile_body<8, true, 256, 4, 2>(R_PASS); }
extern "C" __global__ void __launch_bounds__(256, 2) gemm_regtile_k8_v1(R_ARGS)  { gemm_regtile_body<8, false, 256, 4, 2>(R_PASS); }
// 128 threads, 8 x 16 outputs per thread (warp tile 64 x 64)
extern "C" __global__ void __launch_bounds__(128, 2) gemm_regtile_w_k8_v4(R_ARGS)  { gemm_regtile_body<8, true, 128, 8, 4>(R_PASS); }
extern "C" __global__ void __launch_bounds__(128, 2) gemm_regtile_w_k16_v4(R_ARGS) { gemm_regtile_body<16, true, 128, 8, 4>(R_PASS); }
