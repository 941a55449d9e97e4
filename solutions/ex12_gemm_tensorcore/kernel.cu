// ex12_gemm_tensorcore -- reference solution: C = A @ B with mma.sync, A and B float16 or bfloat16
// (row-major), C float32, fp32 accumulation. Written as drafts/ex12_faster (its CPU emulation and
// tuning notes stay there) and promoted with its fastest setting on an H200 (2026-12-04,
// benchmarks/bench_gemm.py --tune): BK = 64, 3 stages, swizzled, spread copies, persistent CTAs,
// 16-byte epilogue: 0.64-0.67x cuBLAS fp16 at 8192^3 while the SM clock holds, 0.58-0.60x once the
// power cap lowers it (exercises/ex12_gemm_tensorcore/README.md; the previous reference: 0.52-0.59x).
//
// Same instructions and the same warp tiling as the first reference (mma.sync m16n8k16,
// ldmatrix[.trans], cp.async 16-byte copies with zero-fill; 8 warps of 64 x 64, 128 fp32 accumulators
// per thread, fragments double-buffered across k steps). What changes (each one a template
// parameter or a runtime argument, so that bench_gemm.py --tune can sweep them):
//
// 1. Persistent CTAs with one continuous cp.async ring across output tiles (runtime: the grid).
//    A CTA walks tiles t = blockIdx.x, blockIdx.x + gridDim.x, ... of the grouped order. Its copy
//    "producer" is a cursor over the sequence (tile, K tile) of all its work, STAGES - 1 or STAGES K
//    tiles ahead of the math, so the first K tiles of the next output tile are in flight while the
//    warps finish the current one and store it; the first fragments of the next tile are loaded
//    during the last k step of the current one. The reference pays a cold pipeline fill (and its
//    epilogue, with nothing in flight) once per 128 x 256 tile. With gridDim.x = number of tiles
//    every CTA does one tile: the reference's schedule (the knob _PERSIST = False).
// 2. SCHED (0 burst, 1 spread, 2 mbar). burst: the reference's copy schedule (all 6 (BK = 32) or
//    12 (BK = 64) copies of a thread right after the barrier, where they queue in front of the next
//    tile's ldmatrix). spread: the copies of a K tile are spread over the KS = BK / 16 k steps of the
//    previous K tile (CUTLASS's multistage schedule: K tile kt + STAGES - 1 goes into the buffer
//    K tile kt - 1 used; STAGES - 1 tiles in flight instead of STAGES). mbar: spread, with a full
//    and an empty mbarrier per buffer instead of the __syncthreads per K tile: copies arrive on
//    full[s] (cp.async.mbarrier.arrive.noinc, one arrival per thread), each warp's lane 0 arrives
//    on empty[s] after the warp's last ldmatrix of that buffer, the copy into a buffer waits for
//    its empty phase and the reads wait for its full phase, so the warps may drift about one K
//    tile apart instead of meeting at a barrier.
// 3. SWZ: XOR-swizzled shared tiles (no padding): 16-byte chunk c of row r of A is stored at chunk
//    c ^ ((r >> 1) & 3) (BK = 32: 64-byte rows, two rows per 128-byte line) or c ^ (r & 7) (BK = 64),
//    and of B at chunk c ^ (r & 7). Both layouts (padded rows, the reference's, and swizzled) are
//    conflict-free for ldmatrix and for the cp.async stores (counted by drafts/ex12_faster/emulate.py); the
//    swizzled one is 11 % smaller (24 KB instead of 27 KB a stage at BK = 32).
// 4. Epilogue with 16-byte stores (runtime flag vec4: N % 4 == 0 and C 16-byte aligned): the two
//    lanes of each pair in a quad swap two float2 so that every lane holds four consecutive columns
//    of one row (4 shuffles per 16 x 16 block), then one st.global.v4 per row: 32 stores of 16 bytes
//    per thread per tile instead of 64 of 8 (ex13's reference got its short-K shapes from 0.78x to
//    1.01x cuBLAS with the same change). Otherwise the reference's float2 / scalar stores.
// 5. WM x WN warps (2 x 4: 128 x 256 tiles, 4 x 2: 256 x 128).
//
// drafts/ex12_faster/emulate.py replays this kernel's index arithmetic and control flow lane by lane
// on the CPU (its copy of the file has the same gemm_body).
//
// Unchanged: bounds (every 16-byte chunk that starts inside the matrix is copied, others are
// zero-filled; rows of A and B must start 16-byte aligned: lda % 8 == 0 and ldb % 8 == 0, which
// solution.py guarantees with the zero-padded copies made by pad_rows_u16), 64-bit offsets, the
// grouped tile order (group_m tile rows walked column by column).

#include <cuda_fp16.h>
#include <cuda_bf16.h>

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

// mbarriers (sm_80+; try_wait on sm_90, test_wait before): the MBAR schedule's full/empty buffers.
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared.b64 _, [%0];\n" :: "r"(bar) : "memory");
}
// Arrives on `bar` once every cp.async this thread has issued so far has landed (.noinc: the
// arrival counts against the barrier's initial count, one per thread).
__device__ __forceinline__ void cp_async_mbar_arrive(unsigned bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];\n" :: "r"(bar) : "memory");
}
// Waits until the phase of parity `parity` of `bar` has completed.
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity)
{
    unsigned done;
    do {
#if __CUDA_ARCH__ >= 900
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
#else
        asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.parity.shared.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
#endif
    } while (!done);
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

__device__ __forceinline__ void st_global_v4(float* p, float a, float b, float c, float d)
{
    asm volatile("st.global.v4.f32 [%0], {%1,%2,%3,%4};\n" :: "l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}

// Tile t of the grouped order: groups of group_m tile rows, walked column by column (the
// reference's formula).
__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int group_m, int& tm, int& tn)
{
    const int width = group_m * tiles_n;
    const int first_m = (t / width) * group_m;
    const int gsz = min(tiles_m - first_m, group_m);
    const int r = t % width;
    tm = first_m + r % gsz;
    tn = r / gsz;
}

// Shared-memory layouts. Byte offset of 16-byte chunk `c` of row `r` inside one stage's tile.
// Padded: rows of (COLS + 8) elements. Swizzled: rows of COLS elements, chunk index XORed with
// a function of the row that makes the 8 rows of every ldmatrix phase land in 8 different
// 16-byte bank groups (drafts/ex12_faster/emulate.py counts the conflicts).
template <int COLS, bool SWZ> struct Layout {
    static constexpr int ROW_BYTES = SWZ ? COLS * 2 : (COLS + 8) * 2;
    static constexpr int CHUNKS = COLS / 8;
    // XOR pattern of row r: 64-byte rows (COLS = 32, two rows per 128-byte line) use bits 1-2 of r,
    // rows of 128 bytes or more use bits 0-2 (the XOR stays inside the row's first 8 chunks' group).
    static __device__ __forceinline__ int xr(int r) { return CHUNKS == 4 ? ((r >> 1) & 3) : (r & 7); }
    static __device__ __forceinline__ int off(int r, int c)
    {
        return r * ROW_BYTES + ((SWZ ? (c ^ xr(r)) : c) << 4);
    }
};

// SCHED: 0 burst (the reference's: a K tile's copies right after the barrier), 1 spread over the
// k steps, 2 spread with mbarriers instead of __syncthreads (see the top of this file).
template <typename T, int WM, int WN, int BK, int STAGES, bool SWZ, int SCHED>
__device__ __forceinline__ void gemm_body(const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C,
                                          int M, int N, int K, int lda, int ldb, int ldc,
                                          int tiles_m, int tiles_n, int group_m, int vec4)
{
    constexpr int BM = 64 * WM, BN = 64 * WN, THREADS = 32 * WM * WN;
    constexpr int KS = BK / 16;                        // k steps of 16 per K tile
    static_assert(KS >= 2 && KS % 2 == 0, "fragment double buffering needs BK = 32, 64, ...");
    using LA = Layout<BK, SWZ>;                        // A tile: BM rows of BK
    using LB = Layout<BN, SWZ>;                        // B tile: BK rows of BN
    constexpr int A_STAGE = BM * LA::ROW_BYTES;        // bytes per stage
    constexpr int B_STAGE = BK * LB::ROW_BYTES;
    constexpr int A_CPR = BK / 8, B_CPR = BN / 8;      // 16-byte chunks per tile row
    constexpr int A_CH = BM * A_CPR / THREADS;         // chunks per thread per K tile
    constexpr int B_CH = BK * B_CPR / THREADS;
    constexpr int NCH = A_CH + B_CH;
    constexpr bool SPREAD = SCHED >= 1, MBAR = SCHED == 2;
    constexpr int NWARPS = WM * WN;
    constexpr int A_RSTEP = THREADS / A_CPR, B_RSTEP = THREADS / B_CPR;
    static_assert(A_CH * THREADS == BM * A_CPR && B_CH * THREADS == BK * B_CPR, "tile / threads");
    static_assert(A_RSTEP % 8 == 0 && B_RSTEP % 8 == 0, "a thread's chunks share one swizzle pattern");

    extern __shared__ __align__(128) unsigned char smem_raw[];
    const unsigned as_base = smem_u32(smem_raw);
    const unsigned bs_base = as_base + STAGES * A_STAGE;
    // MBAR: full[s] (THREADS arrivals: every thread's copies into buffer s have landed) and
    // empty[s] (NWARPS arrivals: every warp has read buffer s), 8 bytes each, after the tiles.
    const unsigned full_bar = bs_base + STAGES * B_STAGE, empty_bar = full_bar + STAGES * 8;

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int total = tiles_m * tiles_n;
    const int my_tiles = (total - (int)blockIdx.x + (int)gridDim.x - 1) / (int)gridDim.x;
    if (my_tiles <= 0) return;
    const int KT = (K + BK - 1) / BK;
    const int iters = my_tiles * KT;                   // K tiles this CTA computes, all its tiles together

    // ---- copy producer: a cursor over this CTA's work (tile p_tile, K offset p_k0). Source
    // pointers of the thread's first A and B chunk run along K; they are rebuilt, with the row and
    // column bounds, when the cursor moves to the next tile. Once the cursor has passed the last
    // tile, p_k0 stays >= K: every copy is then a zero-fill into a buffer nobody reads again, so
    // the copies need no branch and ptxas can interleave them with the mma.
    const int a_r = tid / A_CPR, a_c = tid % A_CPR;    // this thread's chunk: row a_r + i * A_RSTEP
    const int b_r = tid / B_CPR, b_c = tid % B_CPR;
    const unsigned a_dst = (unsigned)LA::off(a_r, a_c); // + i * A_RSTEP rows: same XOR pattern
    const unsigned b_dst = (unsigned)LB::off(b_r, b_c);
    int p_tile = blockIdx.x, p_k0 = 0;
    const T* a_src;                        // A chunk 0 at (row p_row0 + a_r, column p_k0 + a_c * 8)
    const T* b_src;                        // B chunk 0 at (row p_k0 + b_r, column p_col0 + b_c * 8)
    unsigned a_rows_ok;                    // bit i: A chunk i's row < M
    bool b_col_ok;                         // B chunks' column < N
    auto producer_tile = [&]() {
        int tm, tn;
        tile_coords(p_tile, tiles_m, tiles_n, group_m, tm, tn);
        const int row = tm * BM + a_r, col = tn * BN + b_c * 8;
        a_src = A + (long long)row * lda + a_c * 8;
        b_src = B + (long long)b_r * ldb + col;
        a_rows_ok = 0;
#pragma unroll
        for (int i = 0; i < A_CH; ++i) a_rows_ok |= (row + i * A_RSTEP < M ? 1u : 0u) << i;
        b_col_ok = col < N;
    };
    producer_tile();
    // Chunk j (0 .. NCH-1) of the cursor's K tile into buffer `stage`: j < A_CH are A's.
    auto copy_chunk = [&](int stage, int j) {
        if (j < A_CH) {
            const int i = j;
            const bool ok = ((a_rows_ok >> i) & 1u) && p_k0 + a_c * 8 < K;
            const T* src = ok ? a_src + (long long)(i * A_RSTEP) * lda : A;
            cp_async16(as_base + stage * A_STAGE + a_dst + i * A_RSTEP * LA::ROW_BYTES, src, ok ? 16 : 0);
        } else {
            const int i = j - A_CH;
            const bool ok = b_col_ok && p_k0 + b_r + i * B_RSTEP < K;
            const T* src = ok ? b_src + (long long)(i * B_RSTEP) * ldb : B;
            cp_async16(bs_base + stage * B_STAGE + b_dst + i * B_RSTEP * LB::ROW_BYTES, src, ok ? 16 : 0);
        }
    };
    auto advance_producer = [&]() {
        p_k0 += BK;
        a_src += BK;
        b_src += (long long)BK * ldb;
        if (p_k0 >= K && p_tile + (int)gridDim.x < total) {   // next tile (rare: once per KT)
            p_tile += gridDim.x;
            p_k0 = 0;
            producer_tile();
        }
    };
    auto copy_all = [&](int stage) {
#pragma unroll
        for (int j = 0; j < NCH; ++j) copy_chunk(stage, j);
    };

    // ---- math: warp (wm, wn) owns rows wm*64 .. +63, columns wn*64 .. +63 of the CTA tile.
    const int wm = warp / WN, wn = warp % WN;
    // ldmatrix lane addresses. A (x4): lanes 0-15 rows 0-15 of a 16 x 16 block at chunk 2ks, lanes
    // 16-31 the same rows at chunk 2ks + 1. B (x4.trans): lanes 0-15 k rows 0-15 at column chunk
    // wn*8 + 2nj, lanes 16-31 at chunk + 1. The swizzle pattern of every row a lane reads depends
    // only on lane & 15 (blocks start at multiples of 8 rows), so the lane part is precomputed:
    // physical chunk = (2ks + hi) ^ x = 2ks ^ (hi ^ x) since hi < 2.
    const int hi = lane >> 4;
    const int a_row = wm * 64 + (lane & 15);
    const int a_x = SWZ ? (hi ^ LA::xr(lane & 15)) : hi;
    const unsigned a_lane = (unsigned)(a_row * LA::ROW_BYTES);
    const int b_x = SWZ ? (hi ^ LB::xr(lane & 15)) : hi;
    const unsigned b_lane = (unsigned)((lane & 15) * LB::ROW_BYTES + wn * 8 * 16);

    float acc[4][8][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
            for (int v = 0; v < 4; ++v) acc[i][j][v] = 0.f;

    auto load_frags = [&](unsigned (&af)[4][4], unsigned (&bf)[8][2], int st, int ks) {
        const unsigned as_s = as_base + st * A_STAGE + a_lane + (unsigned)(((2 * ks) ^ a_x) << 4);
#pragma unroll
        for (int mi = 0; mi < 4; ++mi)
            ldmatrix_x4(af[mi], as_s + (unsigned)(mi * 16 * LA::ROW_BYTES));
        const unsigned bs_s = bs_base + st * B_STAGE + b_lane + (unsigned)(ks * 16 * LB::ROW_BYTES);
#pragma unroll
        for (int nj = 0; nj < 4; ++nj) {
            unsigned t[4];
            ldmatrix_x4_trans(t, bs_s + (unsigned)(((2 * nj) ^ b_x) << 4));
            bf[2 * nj][0] = t[0]; bf[2 * nj][1] = t[1];
            bf[2 * nj + 1][0] = t[2]; bf[2 * nj + 1][1] = t[3];
        }
    };
    auto mma_rows = [&](const unsigned (&af)[4][4], const unsigned (&bf)[8][2], int mi0, int mi1) {
#pragma unroll
        for (int mi = mi0; mi < mi1; ++mi)
#pragma unroll
            for (int ni = 0; ni < 8; ++ni) Mma<T>::run(acc[mi][ni], af[mi], bf[ni]);
    };
    auto mma_all = [&](const unsigned (&af)[4][4], const unsigned (&bf)[8][2]) { mma_rows(af, bf, 0, 4); };

    // ---- prologue: SPREAD keeps one buffer free (the first K tile's copies are spread over the
    // k steps of K tile 0); otherwise all STAGES buffers are filled.
    constexpr int PRE = SPREAD ? STAGES - 1 : STAGES;
    if constexpr (MBAR) {
        if (tid == 0) {
#pragma unroll
            for (int s = 0; s < STAGES; ++s) {
                mbar_init(full_bar + 8 * s, THREADS);
                mbar_init(empty_bar + 8 * s, NWARPS);
            }
        }
        __syncthreads();                   // the barriers are initialised before anyone uses them
    }
#pragma unroll
    for (int s = 0; s < PRE; ++s) {
        copy_all(s);
        if constexpr (MBAR) cp_async_mbar_arrive(full_bar + 8 * s);
        else cp_async_commit();            // group s (zero-fills only when K tile s does not exist)
        advance_producer();
    }
    if constexpr (MBAR) {
        mbar_wait(full_bar, 0);            // K tile 0 has landed (everyone's copies)
    } else {
        cp_async_wait<PRE - 1>();          // K tile 0 has landed (this thread's copies) ...
        __syncthreads();                   // ... everyone's
    }
    unsigned af[2][4][4], bf[2][8][2];
    load_frags(af[0], bf[0], 0, 0);

    int st = 0;                            // buffer of the K tile being computed
    int pst = STAGES - 1;                  // SPREAD: buffer the producer is filling
    unsigned ph = 0;                       // MBAR: parity of buffer st's current fill ((it / STAGES) & 1)
    unsigned pph = 0;                      // MBAR: parity of buffer pst's last fill (K tile it - 1)
    int c_tile = blockIdx.x;               // output tile being computed
    int it = 0;                            // K tiles computed so far (all tiles)
    for (int t = 0; t < my_tiles; ++t) {
        for (int kt = 0; kt < KT; ++kt, ++it) {
#pragma unroll
            for (int ks = 0; ks < KS; ++ks) {
                const int cur = ks & 1;
                if constexpr (MBAR) {
                    // Every mbarrier wait is a spin loop, i.e. a basic-block boundary that ptxas
                    // cannot move an mma across: each wait goes between the two halves of a k
                    // step's 32 mma, so that 16 are queued when a warp has to wait.
                    if (ks < KS - 1) load_frags(af[cur ^ 1], bf[cur ^ 1], st, ks + 1);
                    mma_rows(af[cur], bf[cur], 0, 2);
                    // part ks of K tile it + STAGES - 1 into the buffer K tile it - 1 used, once
                    // every warp has arrived on its empty barrier (fill (it - 1) / STAGES, parity pph)
                    if (ks == 0 && it > 0) mbar_wait(empty_bar + 8 * pst, pph);
#pragma unroll
                    for (int j = ks * NCH / KS; j < (ks + 1) * NCH / KS; ++j) copy_chunk(pst, j);
                    if (ks == KS - 1) {
                        cp_async_mbar_arrive(full_bar + 8 * pst);   // K tile it + STAGES - 1
                        __syncwarp();                // the warp's reads of buffer st (all issued) ...
                        if (lane == 0) mbar_arrive(empty_bar + 8 * st);   // ... are done
                        pph = ph;
                        pst = st;
                        st = (st + 1 == STAGES) ? 0 : st + 1;
                        ph ^= st == 0 ? 1u : 0u;
                        if (it + 1 < iters) {
                            mbar_wait(full_bar + 8 * st, ph);           // K tile it + 1 has landed
                            load_frags(af[cur ^ 1], bf[cur ^ 1], st, 0);
                        }
                    }
                    mma_rows(af[cur], bf[cur], 2, 4);
                } else {
                    if (ks < KS - 1) load_frags(af[cur ^ 1], bf[cur ^ 1], st, ks + 1);
                    if constexpr (SPREAD) {
                        // part ks of K tile it + STAGES - 1 into the buffer K tile it - 1 used
                        // (free since the barrier at the end of K tile it - 1)
#pragma unroll
                        for (int j = ks * NCH / KS; j < (ks + 1) * NCH / KS; ++j) copy_chunk(pst, j);
                    }
                    if (ks == KS - 1) {
                        if constexpr (SPREAD) cp_async_commit();
                        cp_async_wait<STAGES - 2>(); // K tile it + 1 has landed (this thread's copies)
                        __syncthreads();             // everyone's; every warp is done reading K tile it
                        if constexpr (!SPREAD) {     // K tile it + STAGES into K tile it's buffer
                            copy_all(st);
                            cp_async_commit();
                        } else {
                            pst = st;
                        }
                        st = (st + 1 == STAGES) ? 0 : st + 1;
                        if (it + 1 < iters) load_frags(af[cur ^ 1], bf[cur ^ 1], st, 0);
                    }
                    mma_all(af[cur], bf[cur]);
                }
            }
            // The cursor moves on after the mma: its (rare) branch to the next tile's coordinates
            // ends a basic block, which must not split the barrier from the last k step's mma.
            advance_producer();
        }

        // ---- epilogue of output tile c_tile (the next tile's copies are in flight meanwhile).
        // acc[mi][ni] = rows (g, g + 8), columns (2q, 2q + 1) of mma tile (mi, ni); g = lane / 4,
        // q = lane % 4.
        int tm, tn;
        tile_coords(c_tile, tiles_m, tiles_n, group_m, tm, tn);
        const int rbase = tm * BM + wm * 64 + (lane >> 2);
        const int cbase = tn * BN + wn * 64;
        const int q = lane & 3;
        if (vec4) {
            // Per 16 x 16 block (mi, ni pair p): lane q holds pairs (row g: cols 2q.. of ni = 2p
            // "v", of ni = 2p + 1 "w"; row g + 8: the same). Even lanes keep (g, v) and (g + 8, w)
            // and take their odd partner's; odd lanes keep (g, w) and (g + 8, v). Then lane q
            // holds columns 4 * ch0 .. + 3 of row g and 4 * (ch0 ^ 2) .. + 3 of row g + 8, with
            // ch0 = (q >> 1) + 2 * (q & 1).
            const bool odd = q & 1;
            const int ch0 = (q >> 1) + (odd ? 2 : 0);
#pragma unroll
            for (int mi = 0; mi < 4; ++mi) {
#pragma unroll
                for (int p = 0; p < 4; ++p) {
                    const float* v = acc[mi][2 * p];
                    const float* w = acc[mi][2 * p + 1];
                    // even lanes send (g, w) and (g + 8, v); odd lanes send (g, v) and (g + 8, w)
                    const float s0 = odd ? v[0] : w[0], s1 = odd ? v[1] : w[1];
                    const float s2 = odd ? w[2] : v[2], s3 = odd ? w[3] : v[3];
                    const float r0 = __shfl_xor_sync(0xffffffffu, s0, 1);
                    const float r1 = __shfl_xor_sync(0xffffffffu, s1, 1);
                    const float r2 = __shfl_xor_sync(0xffffffffu, s2, 1);
                    const float r3 = __shfl_xor_sync(0xffffffffu, s3, 1);
                    // row g: even [v0 v1 r0 r1], odd [r0 r1 w0 w1]
                    const float g0 = odd ? r0 : v[0], g1 = odd ? r1 : v[1];
                    const float g2 = odd ? w[0] : r0, g3 = odd ? w[1] : r1;
                    // row g + 8: even [w2 w3 r2 r3], odd [r2 r3 v2 v3]
                    const float h0 = odd ? r2 : w[2], h1 = odd ? r3 : w[3];
                    const float h2 = odd ? v[2] : r2, h3 = odd ? v[3] : r3;
                    const int c0 = cbase + p * 16 + ch0 * 4;
                    const int c1 = cbase + p * 16 + (ch0 ^ 2) * 4;
                    const int r = rbase + mi * 16;
                    if (r < M) {
                        float* crow = C + (long long)r * ldc;
                        if (c0 < N) st_global_v4(crow + c0, g0, g1, g2, g3);   // N % 4 == 0
                    }
                    if (r + 8 < M) {
                        float* crow = C + (long long)(r + 8) * ldc;
                        if (c1 < N) st_global_v4(crow + c1, h0, h1, h2, h3);
                    }
                }
            }
        } else {
            const bool vec2 = (ldc & 1) == 0;
#pragma unroll
            for (int mi = 0; mi < 4; ++mi) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int r = rbase + mi * 16 + h * 8;
                    if (r >= M) continue;
                    float* crow = C + (long long)r * ldc;
#pragma unroll
                    for (int ni = 0; ni < 8; ++ni) {
                        const int c = cbase + ni * 8 + q * 2;
                        const float v0 = acc[mi][ni][2 * h], v1 = acc[mi][ni][2 * h + 1];
                        if (vec2 && c + 1 < N) {
                            *reinterpret_cast<float2*>(crow + c) = make_float2(v0, v1);
                        } else {
                            if (c < N) crow[c] = v0;
                            if (c + 1 < N) crow[c + 1] = v1;
                        }
                    }
                }
            }
        }
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 8; ++j)
#pragma unroll
                for (int v = 0; v < 4; ++v) acc[i][j][v] = 0.f;
        c_tile += gridDim.x;
    }
    cp_async_wait_all();                   // no copy outlives the CTA ...
    if constexpr (MBAR) {                  // ... nor an asynchronous full-barrier arrival: wait for
        const int fills = iters + STAGES - 1;   // the last fill of every buffer (the zero-fills
#pragma unroll                                  // past the end, which nobody waited for, included)
        for (int s = 0; s < STAGES; ++s) mbar_wait(full_bar + 8 * s, ((fills - 1 - s) / STAGES) & 1);
    }
}

#define G_ARGS(T) const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C, \
                  int M, int N, int K, int lda, int ldb, int ldc, int tiles_m, int tiles_n, int group_m, int vec4
#define G_PASS A, B, C, M, N, K, lda, ldb, ldc, tiles_m, tiles_n, group_m, vec4

// gemm2_<dtype>_<WM>x<WN>_k<BK>_s<STAGES>_<pad|swz>_<burst|spread|mbar>: one kernel per _CONFIG of
// solution.py (WM, WN, BK, STAGES, SWZ, SCHED). Every one is 256 threads, one CTA per SM. Only the
// default and two neighbours are instantiated (burst and mbar: add a G_BOTH line and a _KERNELS entry).
#define G_INST(NAME, T, WM, WN, BK, S, SWZ, SCHED)                                                     \
    extern "C" __global__ void __launch_bounds__(32 * WM * WN, 1) NAME(G_ARGS(T))                     \
    { gemm_body<T, WM, WN, BK, S, SWZ, SCHED>(G_PASS); }
#define G_BOTH(WM, WN, BK, S, LAYOUT, SWZ, SNAME, SCHED)                                               \
    G_INST(gemm2_f16_##WM##x##WN##_k##BK##_s##S##_##LAYOUT##_##SNAME, __half, WM, WN, BK, S, SWZ, SCHED) \
    G_INST(gemm2_bf16_##WM##x##WN##_k##BK##_s##S##_##LAYOUT##_##SNAME, __nv_bfloat16, WM, WN, BK, S, SWZ, SCHED)

G_BOTH(2, 4, 32, 4, swz, true, spread, 1)
G_BOTH(2, 4, 64, 3, swz, true, spread, 1)    // the default (_CONFIG)
G_BOTH(2, 4, 64, 4, swz, true, spread, 1)

// Data movement, not the GEMM (the reference's, unchanged): copy src (rows x cols 16-bit elements,
// rows packed) into the first cols columns of dst (rows x ld, ld >= cols); dst's padding columns
// are left as they are (zero).
extern "C" __global__ void pad_rows_u16(const unsigned short* __restrict__ src, unsigned short* __restrict__ dst,
                                        int rows, int cols, int ld)
{
    for (int r = blockIdx.y; r < rows; r += gridDim.y)
        for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += gridDim.x * blockDim.x)
            dst[(long long)r * ld + c] = src[(long long)r * cols + c];
}
