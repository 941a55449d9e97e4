// ex05_scan -- reference solution: inclusive prefix sum y[i] = x[0] + ... + x[i] for int32 or
// float32 vectors of any length, in ONE pass over memory (decoupled look-back).
// Two kernels: scan_tile (one tile per block, any GPU, any alignment; described here) and wscan
// (persistent and warp-specialised, sm_90 with x and y 16-byte aligned, the faster; its section
// below says how and why).
//
// Bound targeted: a scan must read x once and write y once (8 bytes per element for 4-byte
// types) and does one add per element, so it is memory-bandwidth bound: the target is the copy
// bandwidth. A "reduce, then scan" design reads x twice (12 bytes/element, <= 2/3 of copy);
// one pass needs the carry between tiles to travel *during* the pass, which is what decoupled
// look-back (Merrill & Garland, 2016) does:
//
//   * Tiles. x is cut into tiles of TILE = THREADS * 4 * K elements. A block takes a ticket from
//     an atomic counter at its start and scans the tile with that index, so tile indices follow
//     the order in which blocks actually started: a block only ever waits for tiles owned by
//     blocks that are already running (forward progress without assumptions about scheduling).
//     The block that draws the last ticket resets the counter to 0 for the next call.
//   * Inside a tile, warp w owns the 128*K consecutive elements starting at w * 128*K. Lane l
//     loads its 16-byte vectors k*32 + l (k < K) of that range -- every warp load instruction is
//     one contiguous 512-byte access, no shared-memory transpose needed. Each thread scans its 4
//     values serially, then for every k a 5-step warp scan (__shfl_up_sync) of the 4-value totals
//     gives each lane the sum of the preceding lanes of that 128-element row, and a running row
//     carry links the K rows. Warp totals go through shared memory; warp 0 scans them.
//   * Tile status. status[t * SC_STRIDE] is a 64-bit word [epoch:30 | flag:2 | value:32], alone
//     in its 128-byte line (SC_STRIDE = 16 words; see "Status lines" below), written with ONE
//     64-bit store and read with ONE 64-bit load, so a reader that sees a flag always sees the
//     value that belongs to it (no separate fences between value and flag are needed). flag 1
//     (A): the tile's aggregate (sum of its elements); flag 2 (P): its inclusive prefix (sum of
//     everything up to and including the tile). `epoch` is a call counter passed by the
//     launcher: words left from earlier calls carry an older epoch and read as "not available",
//     so the status array never needs clearing between calls.
//   * Look-back. As soon as a tile's aggregate is known, the block publishes A (tile 0 publishes
//     P). Then warp 0 reads the statuses of the 32 preceding tiles at once (lane l: tile t-1-l),
//     each lane spinning until its tile has published something. If any of them has P, the
//     exclusive prefix is the sum of the A values of the tiles nearer than the nearest P, plus
//     that P; otherwise all 32 are A: add them and look at the next 32. Then publish P for this
//     tile. Tiles before tile 0 count as P with value 0, so the loop always ends.
//   * Forward progress: A is published before the look-back and depends on nothing else; a
//     block spins only on tiles with smaller tickets, i.e. blocks already resident, which will
//     publish A without waiting for anyone. No deadlock for any grid size or scheduling.
//   * Memory traffic: 4 bytes read + 4 written per element, plus one status line per tile
//     (TILE = 4096..8192 elements; the line stays in L2) -- well under 1 % extra.
//   * Status lines. Every block publishes to and polls the statuses of the newest few hundred
//     tiles at once; packed 16 to a 128-byte line, those words sit in a handful of lines, i.e. a
//     handful of L2 slices, which then serialise every publish and poll of the whole GPU. One
//     line per tile spreads them over the slices: wscan at 2^28 int32 went from 0.82x to 0.95x of
//     the copy bandwidth (stride 4 words: 0.92x, 64: 0.94x; benchmarks/RESULTS.md, twenty-third
//     session). The look-back warp's 32 loads then touch 32 lines instead of 2; no cost measured.
//   * The last tile may be partial: guarded scalar loads (0 for missing elements) and guarded
//     scalar stores. Full tiles use 16-byte loads/stores (x and y are 256-byte aligned; the
//     launcher passes vec = 0 for other pointers and every tile takes the guarded path).
//   * int32 arithmetic is exact (the exercise keeps sums within int32); float32 errors: see
//     exercises/ex05_scan/spec.toml -- the carry between tiles is a float32 chain of
//     n / TILE additions, whose error stays far below the tolerance for TILE >= 512.

#define SC_FULL 0xffffffffu
#define SC_FLAG_A 1u
#define SC_FLAG_P 2u
#define SC_STRIDE 16          // status words per tile: one 128-byte line each (solution.py: _STRIDE)

template <class T> struct sc_vec;
template <> struct sc_vec<int> { typedef int4 type; };
template <> struct sc_vec<float> { typedef float4 type; };

__device__ __forceinline__ unsigned sc_bits(int v) { return (unsigned)v; }
__device__ __forceinline__ unsigned sc_bits(float v) { return __float_as_uint(v); }
template <class T> __device__ __forceinline__ T sc_from_bits(unsigned b);
template <> __device__ __forceinline__ int sc_from_bits<int>(unsigned b) { return (int)b; }
template <> __device__ __forceinline__ float sc_from_bits<float>(unsigned b) { return __uint_as_float(b); }

__device__ __forceinline__ void sc_publish(unsigned long long* status, long long tile, unsigned epoch,
                                           unsigned flag, unsigned bits)
{
    const unsigned long long word = ((unsigned long long)((epoch << 2) | flag) << 32) | bits;
    *reinterpret_cast<volatile unsigned long long*>(status + tile * SC_STRIDE) = word;   // one 64-bit store
}

template <class T>
__device__ __forceinline__ T sc_warp_inclusive(T v, int lane)
{
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const T u = __shfl_up_sync(SC_FULL, v, o);
        if (lane >= o) v += u;
    }
    return v;
}

template <class T>
__device__ __forceinline__ T sc_warp_sum(T v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(SC_FULL, v, o);
    return v;
}

// Exclusive prefix of `tile` (> 0); all 32 lanes of one warp. Each round reads LB * 32 preceding
// status words (lane l: tiles nearest - l - 32*j), issuing all of a lane's loads before spinning on
// those not yet published.
template <class T, int LB>
__device__ __forceinline__ T sc_look_back(const unsigned long long* status, long long tile, unsigned epoch, int lane)
{
    T running = T(0);
    long long nearest = tile - 1;
    while (true) {
        unsigned flag[LB];
        unsigned bits[LB];
#pragma unroll
        for (int j = 0; j < LB; ++j) {
            const long long idx = nearest - lane - 32 * j;
            flag[j] = SC_FLAG_P;                // tiles before tile 0: P with value 0
            bits[j] = 0u;
            if (idx >= 0) {
                const unsigned long long w = *reinterpret_cast<const volatile unsigned long long*>(status + idx * SC_STRIDE);
                flag[j] = ((unsigned)(w >> 34) == epoch) ? (unsigned)(w >> 32) & 3u : 0u;
                bits[j] = (unsigned)w;
            }
        }
        // Round j covers tiles nearest-32j .. nearest-32j-31; lanes up to the nearest P count. A round
        // is waited for only when the rounds nearer to the tile found no P.
#pragma unroll
        for (int j = 0; j < LB; ++j) {
            const long long idx = nearest - lane - 32 * j;
            while (flag[j] == 0u) {
                const unsigned long long w = *reinterpret_cast<const volatile unsigned long long*>(status + idx * SC_STRIDE);
                flag[j] = ((unsigned)(w >> 34) == epoch) ? (unsigned)(w >> 32) & 3u : 0u;
                bits[j] = (unsigned)w;
            }
            const unsigned pmask = __ballot_sync(SC_FULL, flag[j] == SC_FLAG_P);
            const int last = pmask ? __ffs(pmask) - 1 : 31;
            running += sc_warp_sum((lane <= last) ? sc_from_bits<T>(bits[j]) : T(0));
            if (pmask) return running;
        }
        nearest -= 32 * LB;
    }
}

template <class T, int THREADS, int K>
__device__ __forceinline__ void scan_tile(const T* __restrict__ x, T* __restrict__ y, unsigned long long* status,
                                          unsigned int* counter, long long n, unsigned epoch, int vec)
{
    typedef typename sc_vec<T>::type V;
    constexpr int WARPS = THREADS / 32;
    constexpr int TILE = THREADS * 4 * K;
    __shared__ long long s_tile;
    __shared__ T s_warp[WARPS];      // warp totals, then exclusive warp prefixes
    __shared__ T s_prefix;           // exclusive prefix of the tile

    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;

    if (threadIdx.x == 0) {
        const unsigned ticket = atomicAdd(counter, 1u);
        if (ticket == gridDim.x - 1) atomicExch(counter, 0u);   // the last ticket: reset for the next call
        s_tile = ticket;
    }
    __syncthreads();
    const long long tile = s_tile;
    const long long wbase = tile * TILE + (long long)warp * (128 * K);   // first element of this warp's range
    const bool full = vec && (tile + 1) * TILE <= n;

    // Load: v[k][0..3] = elements wbase + (k*32 + lane)*4 + 0..3
    T v[K][4];
    if (full) {
        const V* x4 = reinterpret_cast<const V*>(x + wbase);
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const V q = __ldg(x4 + k * 32 + lane);
            v[k][0] = q.x; v[k][1] = q.y; v[k][2] = q.z; v[k][3] = q.w;
        }
    } else {
#pragma unroll
        for (int k = 0; k < K; ++k)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const long long i = wbase + (k * 32 + lane) * 4 + e;
                v[k][e] = i < n ? x[i] : T(0);
            }
    }

    // Scan inside each thread's 4 values, then across the warp row by row.
    T pre[K];                        // sum of everything in this warp's range before lane's 4 values of row k
    T carry = T(0);
#pragma unroll
    for (int k = 0; k < K; ++k) {
        v[k][1] += v[k][0];
        v[k][2] += v[k][1];
        v[k][3] += v[k][2];
        const T incl = sc_warp_inclusive(v[k][3], lane);
        const T row_total = __shfl_sync(SC_FULL, incl, 31);
        pre[k] = carry + (incl - v[k][3]);
        carry += row_total;
    }
    if (lane == 0) s_warp[warp] = carry;
    __syncthreads();

    if (warp == 0) {
        const T wt = lane < WARPS ? s_warp[lane] : T(0);
        const T wincl = sc_warp_inclusive(wt, lane);
        const T aggregate = __shfl_sync(SC_FULL, wincl, WARPS - 1);
        if (lane < WARPS) s_warp[lane] = wincl - wt;      // exclusive prefix of each warp inside the tile
        T excl = T(0);
        if (tile == 0) {
            if (lane == 0) sc_publish(status, 0, epoch, SC_FLAG_P, sc_bits(aggregate));
        } else {
            if (lane == 0) sc_publish(status, tile, epoch, SC_FLAG_A, sc_bits(aggregate));
            excl = sc_look_back<T, 1>(status, tile, epoch, lane);
            if (lane == 0) sc_publish(status, tile, epoch, SC_FLAG_P, sc_bits(excl + aggregate));
        }
        if (lane == 0) s_prefix = excl;
    }
    __syncthreads();

    const T base = s_prefix + s_warp[warp];
    if (full) {
        V* y4 = reinterpret_cast<V*>(y + wbase);
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const T off = base + pre[k];
            V q;
            q.x = v[k][0] + off; q.y = v[k][1] + off; q.z = v[k][2] + off; q.w = v[k][3] + off;
            y4[k * 32 + lane] = q;
        }
    } else {
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const T off = base + pre[k];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const long long i = wbase + (k * 32 + lane) * 4 + e;
                if (i < n) y[i] = v[k][e] + off;
            }
        }
    }
}

// Launch with exactly ceil(n / TILE) blocks of THREADS threads, TILE = THREADS * 4 * K.
// status: >= ceil(n / TILE) * SC_STRIDE words, zeroed when allocated; counter: one word, zero before the
// first call (the kernel leaves it at zero); epoch: 1 .. 2^30 - 1, different from the previous
// call's on the same status array; vec: 1 when x and y are 16-byte aligned.
// Names: scan_{i32,f32}_t{THREADS}_k{K}.

extern "C" __global__ void __launch_bounds__(256)
scan_i32_t256_k4(const int* __restrict__ x, int* __restrict__ y, unsigned long long* status, unsigned int* counter,
                 long long n, unsigned epoch, int vec)
{
    scan_tile<int, 256, 4>(x, y, status, counter, n, epoch, vec);
}

extern "C" __global__ void __launch_bounds__(256)
scan_f32_t256_k4(const float* __restrict__ x, float* __restrict__ y, unsigned long long* status,
                 unsigned int* counter, long long n, unsigned epoch, int vec)
{
    scan_tile<float, 256, 4>(x, y, status, counter, n, epoch, vec);
}

extern "C" __global__ void __launch_bounds__(256)
scan_i32_t256_k8(const int* __restrict__ x, int* __restrict__ y, unsigned long long* status, unsigned int* counter,
                 long long n, unsigned epoch, int vec)
{
    scan_tile<int, 256, 8>(x, y, status, counter, n, epoch, vec);
}

extern "C" __global__ void __launch_bounds__(256)
scan_f32_t256_k8(const float* __restrict__ x, float* __restrict__ y, unsigned long long* status,
                 unsigned int* counter, long long n, unsigned epoch, int vec)
{
    scan_tile<float, 256, 8>(x, y, status, counter, n, epoch, vec);
}

extern "C" __global__ void __launch_bounds__(128)
scan_i32_t128_k8(const int* __restrict__ x, int* __restrict__ y, unsigned long long* status, unsigned int* counter,
                 long long n, unsigned epoch, int vec)
{
    scan_tile<int, 128, 8>(x, y, status, counter, n, epoch, vec);
}

extern "C" __global__ void __launch_bounds__(128)
scan_f32_t128_k8(const float* __restrict__ x, float* __restrict__ y, unsigned long long* status,
                 unsigned int* counter, long long n, unsigned epoch, int vec)
{
    scan_tile<float, 128, 8>(x, y, status, counter, n, epoch, vec);
}

// ---- wscan: the warp-specialised, persistent scan (sm_90; the launcher's default there) ----------
//
// Why: scan_tile above reached 0.71x copy at 2^28 with packed status words (0.85-0.89x with one
// line per status); without its look-back the same kernel reached 0.97x (benchmarks/RESULTS.md,
// sixteenth session). A block there holds its tile in registers
// while it waits for its predecessors' prefixes, so the wait takes resident tiles, and with them
// bytes in flight, away from the memory system. Here a tile's wait overlaps the next tiles' loads: each block is persistent, takes tiles
// from an atomic ticket counter, and splits its warps by role (the design CCCL's "warpspeed" scan
// uses on Blackwell; github.com/NVIDIA/cccl issues 6644 and 6664, pull request 6811):
//
//   warp 0        producer: takes a ticket, announces it (mbarrier `ticket`), then copies the tile
//                 into a shared-memory stage with one 1-D bulk copy (cp.async.bulk, completing
//                 the stage's `full` mbarrier by bytes). The last, partial tile is copied with
//                 guarded scalar loads instead (zeros past n). Up to S tiles are in flight.
//   warp 1        look-back: as soon as a ticket is announced, computes the tile's exclusive
//                 prefix from its predecessors' status words (the same 64-bit [epoch|flag|value]
//                 words and warp-wide look-back as scan_tile), before the tile's data has
//                 even arrived; then waits for the tile's aggregate, publishes P, and hands the
//                 prefix to the compute warps (mbarrier `prefix`).
//   warps 2..W+1  compute: reduce tile i (publish its aggregate A at once: flag A, or P for tile 0)
//                 then scan and store tile i-1 (whose prefix the look-back warp has had a whole
//                 tile's time to find), then release its stage (mbarrier `empty`).
//
// Look-back window: a tile's inclusive prefix P appears about one L2 round trip (RT, ~0.5-0.7 us
// under load, an estimate) after its aggregate, so at r tiles per us the newest P trails the newest
// aggregate by about r * RT tiles, and a look-back that reads 32 * LB statuses per round trip keeps
// up only while 32 * LB / RT >= r. At the copy bandwidth (4.2 TB/s) r = 128 tiles per us for the
// default 32 KB tiles (256 for 16 KB): LB >= 2-4 by this model. Measured, LB = 1 is as fast
// (below): the model's round trip is pessimistic, or the look-back warp is rarely the bottleneck.
// LB is a template knob.
//
// Layout of a stage: TILE = W * 128 * K elements; compute warp w owns the 128*K consecutive
// elements from w * 128*K; lane l reads its 16-byte vectors k*32 + l (k < K), so every warp
// access to shared memory and every store to y is one contiguous 512-byte row.
//
// Forward progress: tickets are drawn only by running blocks, and a block handles its tickets in
// increasing order. The smallest unfinished tile u is therefore its block's oldest pending tile;
// that block's compute warps reduce u (they wait only for u's bytes) and its look-back needs only
// tiles < u, all finished. So u finishes, for any grid size and any scheduling.
//
// Counter: every block draws exactly one ticket >= tiles (its last); the block that draws
// tiles + gridDim.x - 1, the last ticket of the call, resets the counter to 0 for the next call.
// Requirements (the launcher checks them): x and y 16-byte aligned (else scan_tile runs).

// Measured on the H200 (benchmarks/RESULTS.md, twenty-second and twenty-third sessions;
// bench_references.py --tune): with packed status words, 2^28 int32 reached 0.83x copy with W = 8,
// K = 8 (32 KB tiles), S = 2 stages, LB = 1 (3 blocks per SM), and no change helped -- S = 3 (2
// blocks per SM) 0.75x, a wider look-back, two look-back warps, a sleep between polls, the next
// ticket drawn ahead (0.78x), a tile waiting for its prefix in registers so its stage reloads
// early (0.82x); the same kernel without its look-back ran at 0.985x. One status line per tile
// (above) took it to 0.95x.
//
// The bulk copy and mbarrier transaction counts are sm_90 instructions: other architectures
// compile a kernel that traps (tests/test_nvcc.py builds every .cu file for sm_80 and sm_89 too).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900

__device__ __forceinline__ unsigned ws_smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void ws_mbar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void ws_mbar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void ws_mbar_arrive_expect_tx(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void ws_mbar_wait(unsigned bar, unsigned parity)
{
    unsigned done;
    do {
        asm volatile("{\n"
                     ".reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n"
                     "}\n" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}
// `bytes` from global `src` into shared `dst` (both 16-byte aligned, bytes a multiple of 16);
// completes `bytes` transactions on mbarrier `bar`.
__device__ __forceinline__ void ws_bulk_load(unsigned dst, const void* src, unsigned bytes, unsigned bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                 :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
// Named barrier `id` over the `count` threads of the compute warps.
__device__ __forceinline__ void ws_bar_sync(unsigned id, unsigned count)
{
    asm volatile("bar.sync %0, %1;\n" :: "r"(id), "r"(count) : "memory");
}

// Shared memory: S stages of TILE elements, then the per-stage bookkeeping.
template <class T, int W, int S>
struct WsSmall {
    long long ticket[S];
    T wexcl[S][W];       // per compute warp: its total, then its exclusive prefix inside the tile
    T agg[S];            // the tile's aggregate
    T excl[S];           // the tile's exclusive prefix (from the look-back warp)
    unsigned long long bar[5][S];   // mbarriers: ticket, full, aggregate, prefix, empty
};
enum { WS_TICKET = 0, SC_FULLB = 1, WS_AGG = 2, WS_PREFIX = 3, WS_EMPTY = 4 };

template <class T, int W, int K, int S, int LB>
__device__ __forceinline__ void ws_scan(const T* __restrict__ x, T* __restrict__ y, unsigned long long* status,
                                        unsigned int* counter, long long n, unsigned epoch)
{
    typedef typename sc_vec<T>::type V;
    static_assert(S >= 2, "the compute warps reduce tile i + 1 before they release tile i's stage");
    constexpr int TILE = W * 128 * K;
    constexpr unsigned TILE_BYTES = TILE * sizeof(T);
    extern __shared__ __align__(128) unsigned char ws_raw[];
    T* stages = reinterpret_cast<T*>(ws_raw);
    WsSmall<T, W, S>& sm = *reinterpret_cast<WsSmall<T, W, S>*>(ws_raw + (size_t)S * TILE_BYTES);
    auto bar = [&](int kind, int s) { return ws_smem(&sm.bar[kind][s]); };

    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const long long tiles = (n + TILE - 1) / TILE;

    if (threadIdx.x == 0) {
        for (int s = 0; s < S; ++s) {
            ws_mbar_init(bar(WS_TICKET, s), 1);
            ws_mbar_init(bar(SC_FULLB, s), 1);
            ws_mbar_init(bar(WS_AGG, s), 1);
            ws_mbar_init(bar(WS_PREFIX, s), 1);
            ws_mbar_init(bar(WS_EMPTY, s), W);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (warp == 0) {
        // ---- producer ----------------------------------------------------------------------
        for (int i = 0;; ++i) {
            const int s = i % S;
            if (i >= S) ws_mbar_wait(bar(WS_EMPTY, s), ((i / S) - 1) & 1);
            long long t = 0;
            if (lane == 0) {
                const unsigned ticket = atomicAdd(counter, 1u);
                if ((long long)ticket == tiles + gridDim.x - 1) atomicExch(counter, 0u);
                t = ticket < tiles ? (long long)ticket : -1;
                sm.ticket[s] = t;
                ws_mbar_arrive(bar(WS_TICKET, s));
            }
            t = __shfl_sync(SC_FULL, t, 0);
            if (t < 0) {
                if (lane == 0) ws_mbar_arrive(bar(SC_FULLB, s));
                break;
            }
            T* dst = stages + (size_t)s * TILE;
            const long long first = t * TILE;
            if (first + TILE <= n) {
                if (lane == 0) {
                    ws_mbar_arrive_expect_tx(bar(SC_FULLB, s), TILE_BYTES);
                    ws_bulk_load(ws_smem(dst), x + first, TILE_BYTES, bar(SC_FULLB, s));
                }
            } else {                                   // the last, partial tile
                for (int e = lane; e < TILE; e += 32) dst[e] = first + e < n ? x[first + e] : T(0);
                __syncwarp();
                if (lane == 0) ws_mbar_arrive(bar(SC_FULLB, s));
            }
        }
    } else if (warp == 1) {
        // ---- look-back ---------------------------------------------------------------------
        for (int i = 0;; ++i) {
            const int s = i % S;
            const unsigned ph = (i / S) & 1;
            ws_mbar_wait(bar(WS_TICKET, s), ph);
            const long long t = sm.ticket[s];
            if (t < 0) break;
            const T excl = t > 0 ? sc_look_back<T, LB>(status, t, epoch, lane) : T(0);
            ws_mbar_wait(bar(WS_AGG, s), ph);
            if (lane == 0) {
                if (t > 0) sc_publish(status, t, epoch, SC_FLAG_P, sc_bits(excl + sm.agg[s]));
                sm.excl[s] = excl;
                ws_mbar_arrive(bar(WS_PREFIX, s));
            }
        }
    } else {
        // ---- compute -----------------------------------------------------------------------
        const int cw = warp - 2;
        // Reduce tile i: returns false at the end (no tile).
        auto reduce = [&](int i) -> bool {
            const int s = i % S;
            ws_mbar_wait(bar(SC_FULLB, s), (i / S) & 1);
            const long long t = sm.ticket[s];
            if (t < 0) return false;
            const V* src = reinterpret_cast<const V*>(stages + (size_t)s * TILE) + cw * 32 * K;
            T sum = T(0);
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const V q = src[k * 32 + lane];
                sum += (q.x + q.y) + (q.z + q.w);
            }
            sum = sc_warp_sum(sum);
            if (lane == 0) sm.wexcl[s][cw] = sum;
            ws_bar_sync(1, W * 32);
            if (cw == 0) {
                const T wt = lane < W ? sm.wexcl[s][lane] : T(0);
                const T incl = sc_warp_inclusive(wt, lane);
                const T agg = __shfl_sync(SC_FULL, incl, W - 1);
                if (lane < W) sm.wexcl[s][lane] = incl - wt;
                if (lane == 0) {
                    sc_publish(status, t, epoch, t == 0 ? SC_FLAG_P : SC_FLAG_A, sc_bits(agg));
                    sm.agg[s] = agg;
                }
                __syncwarp();
                if (lane == 0) ws_mbar_arrive(bar(WS_AGG, s));
            }
            return true;
        };
        // Scan and store tile i (its prefix from the look-back warp), then release its stage.
        auto scan_store = [&](int i) {
            const int s = i % S;
            ws_mbar_wait(bar(WS_PREFIX, s), (i / S) & 1);
            const long long t = sm.ticket[s];
            T carry = sm.excl[s] + sm.wexcl[s][cw];
            const V* src = reinterpret_cast<const V*>(stages + (size_t)s * TILE) + cw * 32 * K;
            const long long wbase = t * TILE + (long long)cw * (128 * K);
            const bool full = wbase + 128 * K <= n;
            V* y4 = reinterpret_cast<V*>(y + wbase);
#pragma unroll
            for (int k = 0; k < K; ++k) {
                V q = src[k * 32 + lane];
                q.y += q.x;
                q.z += q.y;
                q.w += q.z;
                const T incl = sc_warp_inclusive(q.w, lane);
                const T row_total = __shfl_sync(SC_FULL, incl, 31);
                const T off = carry + (incl - q.w);
                carry += row_total;
                q.x += off; q.y += off; q.z += off; q.w += off;
                if (full) {
                    y4[k * 32 + lane] = q;
                } else {
                    const long long i0 = wbase + (k * 32 + lane) * 4;
                    if (i0 < n) y[i0] = q.x;
                    if (i0 + 1 < n) y[i0 + 1] = q.y;
                    if (i0 + 2 < n) y[i0 + 2] = q.z;
                    if (i0 + 3 < n) y[i0 + 3] = q.w;
                }
            }
            __syncwarp();
            if (lane == 0) ws_mbar_arrive(bar(WS_EMPTY, s));
        };
        if (reduce(0)) {
            for (int i = 0;; ++i) {
                const bool more = reduce(i + 1);
                scan_store(i);
                if (!more) break;
            }
        }
    }
}

#else
template <class T, int W, int K, int S, int LB>
__device__ __forceinline__ void ws_scan(const T*, T*, unsigned long long*, unsigned int*, long long, unsigned)
{
    __trap();
}
#endif

// Launch: blocks = min(tiles, resident blocks), 32 * (W + 2) threads, dynamic shared memory of
// at least S * TILE * sizeof(T) + sizeof(WsSmall<T, W, S>) bytes (solution.py adds the small part
// with room to spare). status: >= tiles * SC_STRIDE words, zeroed when allocated; counter: one word, 0 before
// the first call; epoch 1 .. 2^30 - 1, different from the previous call's. Names:
// wscan_{i32,f32}_w{W}_k{K}_s{S}_lb{LB}.
#define WS_KERNEL(NAME, T, W, K, S, LB)                                                              \
    extern "C" __global__ void __launch_bounds__(32 * (W + 2))                                       \
    NAME(const T* __restrict__ x, T* __restrict__ y, unsigned long long* status, unsigned int* counter, \
         long long n, unsigned epoch)                                                                \
    {                                                                                                \
        ws_scan<T, W, K, S, LB>(x, y, status, counter, n, epoch);                                    \
    }

#define WS_BOTH(W, K, S, LB)                                        \
    WS_KERNEL(wscan_i32_w##W##_k##K##_s##S##_lb##LB, int, W, K, S, LB) \
    WS_KERNEL(wscan_f32_w##W##_k##K##_s##S##_lb##LB, float, W, K, S, LB)

WS_BOTH(8, 8, 2, 1)
WS_BOTH(8, 8, 2, 2)
WS_BOTH(16, 4, 2, 2)
WS_BOTH(8, 8, 3, 2)
