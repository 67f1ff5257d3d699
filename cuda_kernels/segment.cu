// gpusparse CUDA kernels: sortedness, segment ids, segmented reduce.
//
// Keys of a (g, n) lexicographic key set are stored row-major: key row r of
// element i is keys[r * n + i]; a 1-D key array is the case g == 1. (Segment
// starts from ids are gs_compress of compress.cu: a binary search per
// segment, which writes every entry whatever the ids hold.)

#include "common.cuh"

#define GS_SEG_THREADS 256
#define GS_SEG_ITEMS 8
#define GS_SEG_TILE 2048  // GS_SEG_THREADS * GS_SEG_ITEMS
#define GS_RED_THREADS 256
#define GS_RED_MAX_TILE 2048
#define GS_LLONG_MAX 9223372036854775807LL

// -1, 0 or 1 comparing element a with element b (lexicographic over rows).
template <typename K>
__device__ __forceinline__ int gs_compare_lex(const K* __restrict__ keys, long long n, int g,
                                              long long a, long long b) {
    for (int r = 0; r < g; ++r) {
        const K x = keys[r * n + a];
        const K y = keys[r * n + b];
        if (x < y) return -1;
        if (y < x) return 1;
    }
    return 0;
}

// True when element i (1 <= i < n) differs from element i - 1.
template <typename K>
__device__ __forceinline__ bool gs_is_head(const K* __restrict__ keys, long long n, int g, long long i) {
    for (int r = 0; r < g; ++r) {
        if (keys[r * n + i] != keys[r * n + i - 1]) return true;
    }
    return false;
}

// gs_sortedness: min over i of (2 if key[i-1] < key[i], 1 if equal, 0 if
// greater), folded into *result with atomicMin.
//
// Thread mapping: one thread per adjacent pair (i - 1, i), i = 1 + global
// thread index, grid-stride (64-bit); block-wide OR votes, then one
// atomicMin per block and round that saw a repeat or a descent.
// Preconditions: n >= 2; *result initialised to 2 by the launcher; keys is
// a C-contiguous (g, n) block, g >= 1.
template <typename K>
__global__ void __launch_bounds__(GS_SEG_THREADS) gs_sortedness(
    const K* __restrict__ keys, long long n, int g, int* __restrict__ result) {
    // The loop runs over the block's first pair, so it is uniform over the
    // block (the votes below need every thread).
    for (long long base = static_cast<long long>(blockIdx.x) * blockDim.x; base < n - 1; base += gs_grid_stride()) {
        const long long i = base + threadIdx.x + 1;
        int status = 2;
        if (i < n) {
            const int c = gs_compare_lex<K>(keys, n, g, i - 1, i);
            status = c > 0 ? 0 : (c == 0 ? 1 : 2);
        }
        const int any_descent = __syncthreads_or(status == 0);
        const int any_repeat = __syncthreads_or(status == 1);
        if (threadIdx.x == 0 && (any_descent || any_repeat)) {
            atomicMin(result, any_descent ? 0 : 1);
        }
    }
}

// gs_segment_head_counts: how many run heads (elements that differ from
// their predecessor; element 0 is not counted) each tile holds.
//
// Thread mapping: one block of 256 threads per tile of GS_SEG_TILE
// elements (tiles blockIdx.x + j * gridDim.x, 64-bit); thread t looks at
// elements tile * TILE + j * 256 + t, j < 8 (coalesced); block sum; thread 0
// writes tile_counts[tile].
// Preconditions: any 1-D grid (ceil(n / TILE) blocks at most are useful);
// keys sorted (g, n) block.
template <typename K>
__global__ void __launch_bounds__(GS_SEG_THREADS) gs_segment_head_counts(
    const K* __restrict__ keys, long long n, int g, long long* __restrict__ tile_counts) {
    __shared__ int s_scan[GS_WARP];
    const long long n_tiles = (n + GS_SEG_TILE - 1) / GS_SEG_TILE;
    for (long long tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
        const long long base = tile * GS_SEG_TILE;
        int count = 0;  // at most GS_SEG_ITEMS per thread, GS_SEG_TILE per tile
#pragma unroll
        for (int j = 0; j < GS_SEG_ITEMS; ++j) {
            const long long i = base + j * GS_SEG_THREADS + threadIdx.x;
            if (i >= 1 && i < n && gs_is_head<K>(keys, n, g, i)) ++count;
        }
        const int total = gs_block_sum<int>(count, s_scan);
        if (threadIdx.x == 0) tile_counts[tile] = total;
    }
}

// gs_segment_ids_scan: ids[i] = number of run heads in [1, i].
//
// Thread mapping: the same tiles as gs_segment_head_counts; the block walks
// its tile in 8 rounds of 256 consecutive elements (one per thread,
// coalesced), each round an inclusive block scan of the head flags added to
// the running carry, which starts at the inclusive scan of the tile counts
// of the tiles before it.
// Preconditions: as gs_segment_head_counts; ``scanned`` is the inclusive
// scan of its tile_counts (only read for tiles > 0).
template <typename K>
__global__ void __launch_bounds__(GS_SEG_THREADS) gs_segment_ids_scan(
    const K* __restrict__ keys, long long n, int g, const long long* __restrict__ scanned,
    long long* __restrict__ ids) {
    __shared__ int s_scan[GS_WARP];
    const long long n_tiles = (n + GS_SEG_TILE - 1) / GS_SEG_TILE;
    for (long long tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
        const long long base = tile * GS_SEG_TILE;
        long long carry = tile > 0 ? scanned[tile - 1] : 0;
#pragma unroll
        for (int j = 0; j < GS_SEG_ITEMS; ++j) {
            const long long i = base + j * GS_SEG_THREADS + threadIdx.x;
            const int flag = (i >= 1 && i < n && gs_is_head<K>(keys, n, g, i)) ? 1 : 0;
            int round_total;  // at most GS_SEG_THREADS
            const int incl = gs_block_inclusive_sum<int>(flag, s_scan, round_total);
            if (i < n) ids[i] = carry + incl;
            carry += round_total;
        }
    }
}

// What a segmented reduction accumulates (acc_t), writes (out_t), and how.
//   sum/prod/min/max: acc_t = out_t = T, gs_reducer<T, OP>.
//   any/all:          acc_t = out_t = bool, v != 0 (NaN counts as true).
//   argmin/argmax:    acc_t = gs_arg_state<T>, out_t = long long: the row of
//                     the first extreme element (the first NaN if any), -1
//                     for an empty segment.
// lift(v, row) turns one input into an accumulator; result() is what is
// written; reload() rebuilds the accumulator of a written output (the fix-up
// folds earlier tiles into it: for argmin/argmax it rereads the value of
// the row written).
template <typename T, int OP> struct gs_seg_policy {
    typedef T acc_t;
    typedef T out_t;
    typedef gs_reducer<T, OP> Op;
    static __device__ __forceinline__ acc_t identity() { return Op::identity(); }
    static __device__ __forceinline__ acc_t lift(T v, long long) { return v; }
    __device__ __forceinline__ acc_t operator()(acc_t a, acc_t b) const { return Op()(a, b); }
    static __device__ __forceinline__ out_t result(acc_t a) { return a; }
    static __device__ __forceinline__ acc_t reload(out_t o, const T*, long long, long long) { return o; }
};

template <typename T, bool ALL> struct gs_seg_logic_policy {
    typedef bool acc_t;
    typedef bool out_t;
    static __device__ __forceinline__ acc_t identity() { return ALL; }
    static __device__ __forceinline__ acc_t lift(T v, long long) { return gs_nonzero<T>(v); }
    __device__ __forceinline__ acc_t operator()(acc_t a, acc_t b) const { return ALL ? (a && b) : (a || b); }
    static __device__ __forceinline__ out_t result(acc_t a) { return a; }
    static __device__ __forceinline__ acc_t reload(out_t o, const T*, long long, long long) { return o; }
};
template <typename T> struct gs_seg_policy<T, GS_OP_ANY> : gs_seg_logic_policy<T, false> {};
template <typename T> struct gs_seg_policy<T, GS_OP_ALL> : gs_seg_logic_policy<T, true> {};

template <typename T, bool MAX> struct gs_seg_arg_policy {
    typedef gs_arg_state<T> acc_t;
    typedef long long out_t;
    static __device__ __forceinline__ acc_t identity() {
        acc_t a;
        a.v = gs_zero<T>();
        a.row = -1;
        return a;
    }
    static __device__ __forceinline__ acc_t lift(T v, long long row) {
        acc_t a;
        a.v = v;
        a.row = row;
        return a;
    }
    // a holds earlier elements than b: b wins only when strictly better.
    __device__ __forceinline__ acc_t operator()(acc_t a, acc_t b) const {
        if (a.row < 0) return b;
        if (b.row < 0) return a;
        const bool better = MAX ? gs_better_max<T>(b.v, a.v) : gs_better_min<T>(b.v, a.v);
        return better ? b : a;
    }
    static __device__ __forceinline__ out_t result(acc_t a) { return a.row; }
    static __device__ __forceinline__ acc_t reload(out_t o, const T* values, long long width, long long c) {
        return o >= 0 ? lift(values[o * width + c], o) : identity();
    }
};
template <typename T> struct gs_seg_policy<T, GS_OP_ARGMIN> : gs_seg_arg_policy<T, false> {};
template <typename T> struct gs_seg_policy<T, GS_OP_ARGMAX> : gs_seg_arg_policy<T, true> {};

// gs_segment_reduce: out[j, c] = op over positions p in [starts[j],
// starts[j + 1]) of values[row(p), c], row(p) = perm[p] (or p); identity for
// an empty segment (see gs_seg_policy for the ops and their output types).
// Merge-path segmented reduction (Merrill & Garland), so the work per thread
// is the same whatever the segment lengths: one huge segment, millions of
// empty or one-element segments, or a mix.
//
// The work is the merge of the s segment ends e_j = starts[j + 1] with the
// n_pos positions 0..n_pos-1 (an end comes before the positions >= it):
// s + n_pos items, cut into tiles of ``rl * items`` consecutive items, one
// tile per block (blockIdx.x); blockIdx.y strides over chunks of cl columns.
//
// Thread mapping: a block of 256 threads is rl = 256 / cl "workers" of
// cl = 2**cl_log2 lanes; lane l of a worker handles column chunk * cl + l,
// so a worker reads cl consecutive values of a row (coalesced for wide rows;
// for width 1, cl = 1 and each thread is a worker). Worker k consumes the
// ``items`` merge items starting at tile diagonal k * items: a position folds
// its value into the running accumulator; an end emits the accumulator for
// its segment and resets it. The first segment a worker emits may have
// started in earlier workers, so it is held back; the open accumulators left
// at each worker's end (its "carry", keyed by segment) go through a
// segmented inclusive scan across workers in shared memory (Hillis-Steele,
// fixed association), and the held-back emission is completed with the carry
// of the worker before it when that carry belongs to the same segment. The
// block's last carry (segment id, or s when none is open, and per-column
// accumulator) goes to carry_seg/carry_val for gs_segment_reduce_fixup,
// which folds it into the segment's output written by a later block.
// Deterministic: every combination order is fixed by the launch shape; no
// atomics.
// Block search: thread 0 and thread 32 binary-search the merge path on the
// global starts for the tile's first and last diagonal; the tile's segment
// ends are staged in shared memory and each worker searches there.
// Preconditions: starts (s + 1,) non-decreasing, starts[s] <= n_pos
// (positions outside [starts[0], starts[s]) are ignored); perm null or
// (n_pos,) with entries in [0, m); values (m, width) C-contiguous; m >= 1
// (m == n_pos without perm); s >= 1, width >= 1; rl * items <=
// GS_RED_MAX_TILE; grid.x = ceil((s + n_pos) / (rl * items)) (at most
// 2**31 - 1: tiles hold 512 to 2048 items of rows of 1 to 32+ values, so
// that many tiles need over 2**40 values, more than any device holds; the
// launcher refuses more, and blockIdx.x is widened to 64 bits); 1-D blocks of
// GS_RED_THREADS threads; carry_seg (grid.x,), carry_val (grid.x, width) of
// acc_t; *flag == 0 on entry.
// Other values (the memory-safety contract): starts are clipped into
// [0, n_pos] as they are loaded and perm entries into [0, m), so starts
// that are out of range but non-decreasing once clipped give the exact
// result of the clipped ranges. Starts that are not non-decreasing would
// make the tiles' cuts inconsistent: every block checks the ends it stages
// (and that its two cuts follow each other), and one that finds a descent
// sets *flag and does nothing more; gs_segment_reduce_fixup then does
// nothing either and gs_segment_reduce_fallback recomputes every output
// from the clipped ranges [lo, max(lo, hi)). Every pair of consecutive
// starts is checked by some block (the tiles' end ranges chain from 0 to
// s), so a launch whose starts are non-decreasing never takes the fallback.
// Occupancy target: 6 blocks of 256 threads per SM (at most 40 registers);
// 4 (64 registers) for the 16- and 32-byte accumulators (complex128,
// argmin/argmax states), which would otherwise spill.
#define GS_RED_MIN_BLOCKS(T, OP) (sizeof(typename gs_seg_policy<T, OP>::acc_t) >= 16 ? 4 : 6)
template <typename T, int OP>
__global__ void __launch_bounds__(GS_RED_THREADS, GS_RED_MIN_BLOCKS(T, OP)) gs_segment_reduce(
    const T* __restrict__ values, long long m, long long width, const long long* __restrict__ starts,
    long long n_segments, const long long* __restrict__ perm, long long n_pos,
    int cl_log2, int items, typename gs_seg_policy<T, OP>::out_t* __restrict__ out,
    long long* __restrict__ carry_seg, typename gs_seg_policy<T, OP>::acc_t* __restrict__ carry_val,
    int* __restrict__ flag) {
    typedef gs_seg_policy<T, OP> P;
    typedef typename P::acc_t A;
    const P op = P();
    __shared__ long long s_ends[GS_RED_MAX_TILE + 1];
    __shared__ long long s_bounds[4];
    __shared__ long long s_cseg[GS_RED_THREADS];
    __shared__ A s_cval[GS_RED_THREADS];

    const int cl = 1 << cl_log2;
    const int rl = GS_RED_THREADS >> cl_log2;
    const int worker = static_cast<int>(threadIdx.x) >> cl_log2;
    const int lane = static_cast<int>(threadIdx.x) & (cl - 1);
    const long long s = n_segments;
    const long long tile = static_cast<long long>(rl) * items;
    const long long d0 = static_cast<long long>(blockIdx.x) * tile;
    const long long d1 = min(d0 + tile, s + n_pos);
    const long long start0 = gs_clamp(starts[0], 0, n_pos);

    if (threadIdx.x == 0 || threadIdx.x == GS_WARP) {
        const long long diag = threadIdx.x == 0 ? d0 : d1;
        long long lo = max(0LL, diag - n_pos);
        long long hi = min(diag, s);
        while (lo < hi) {
            const long long mid = lo + ((hi - lo) >> 1);
            if (gs_clamp(starts[mid + 1], 0, n_pos) <= diag - mid - 1) lo = mid + 1; else hi = mid;
        }
        const int slot = threadIdx.x == 0 ? 0 : 2;
        s_bounds[slot] = lo;
        s_bounds[slot + 1] = diag - lo;
    }
    __syncthreads();
    const long long i0 = s_bounds[0], k0 = s_bounds[1];
    // Cuts that do not follow each other (descending starts) leave the tile
    // without work: n_ends stays within s_ends, and the launch is flagged.
    const bool crossed = s_bounds[2] < i0 || s_bounds[3] < k0;
    const long long i1 = crossed ? i0 : s_bounds[2];
    const long long k1 = crossed ? k0 : s_bounds[3];
    // The ends this tile can look at: e_i for i in [i0, min(i1, s - 1)].
    const long long n_ends = min(i1, s - 1) - i0 + 1;
    for (long long x = threadIdx.x; x < n_ends; x += GS_RED_THREADS) {
        s_ends[x] = gs_clamp(starts[i0 + 1 + x], 0, n_pos);
    }
    __syncthreads();
    bool descent = crossed;
    for (long long x = threadIdx.x; x < n_ends; x += GS_RED_THREADS) {
        const long long before = x > 0 ? s_ends[x - 1] : gs_clamp(starts[i0], 0, n_pos);
        if (before > s_ends[x]) descent = true;
    }
    if (__syncthreads_or(descent)) {  // uniform over the block
        if (threadIdx.x == 0) *flag = 1;
        return;
    }

    // This worker's start on the tile's merge path.
    const long long span = d1 - d0;
    const long long dd = min(static_cast<long long>(worker) * items, span);
    const long long dend = min(dd + items, span);
    long long i_start, k_start;
    {
        long long lo = max(0LL, dd - (k1 - k0));
        long long hi = min(dd, i1 - i0);
        while (lo < hi) {
            const long long mid = lo + ((hi - lo) >> 1);
            if (s_ends[mid] <= k0 + dd - mid - 1) lo = mid + 1; else hi = mid;
        }
        i_start = i0 + lo;
        k_start = k0 + dd - lo;
    }

    const long long col_step = static_cast<long long>(gridDim.y) << cl_log2;
    for (long long cbase = static_cast<long long>(blockIdx.y) << cl_log2; cbase < width; cbase += col_step) {
        const long long col = cbase + lane;
        const bool col_ok = col < width;
        long long i = i_start, k = k_start;
        A acc = P::identity();
        long long first_seg = -1;
        A first_val = P::identity();
        for (long long it = dd; it < dend; ++it) {
            // (i - i0 < n_ends and k < n_pos always hold here: the ends are
            // non-decreasing; the compares only keep that local.)
            const long long e = (i < s && i - i0 < n_ends) ? s_ends[i - i0] : GS_LLONG_MAX;
            if (k < e) {  // position k belongs to segment i (if any)
                if (col_ok && i < s && (i > 0 || k >= start0) && k < n_pos) {
                    const long long row = perm != nullptr ? gs_clip_index(perm[k], m) : k;
                    acc = op(acc, P::lift(values[row * width + col], row));
                }
                ++k;
            } else {  // segment i ends here
                if (first_seg < 0) {
                    first_seg = i;
                    first_val = acc;
                } else if (col_ok) {
                    out[i * width + col] = P::result(acc);
                }
                acc = P::identity();
                ++i;
            }
        }

        // Segmented inclusive scan of the workers' carries.
        if (lane == 0) s_cseg[worker] = i;
        s_cval[threadIdx.x] = acc;  // index worker * cl + lane
        __syncthreads();
        for (int off = 1; off < rl; off <<= 1) {
            bool take = false;
            A prev = P::identity();
            if (worker >= off && s_cseg[worker - off] == s_cseg[worker]) {
                take = true;
                prev = s_cval[threadIdx.x - (off << cl_log2)];
            }
            __syncthreads();
            if (take) s_cval[threadIdx.x] = op(prev, s_cval[threadIdx.x]);
            __syncthreads();
        }

        if (first_seg >= 0 && col_ok) {
            A v = first_val;
            if (worker > 0 && s_cseg[worker - 1] == first_seg) v = op(s_cval[threadIdx.x - cl], v);
            out[first_seg * width + col] = P::result(v);
        }
        if (worker == rl - 1) {
            if (lane == 0 && blockIdx.y == 0 && cbase == 0) carry_seg[blockIdx.x] = s_cseg[worker];
            if (col_ok) carry_val[static_cast<long long>(blockIdx.x) * width + col] = s_cval[threadIdx.x];
        }
        __syncthreads();  // shared memory is reused by the next column chunk
    }
}

// gs_segment_reduce_fixup: folds the tiles' carries into the outputs.
//
// Thread mapping: one warp per tile t (8 per block, grid-stride over tiles,
// 64-bit); blockIdx.y strides over columns. The carries of consecutive tiles that belong to the
// same segment form a run (carry_seg is non-decreasing, so the run's end is
// a binary search away); the warp of the run's first tile reduces the whole
// run and writes out[seg] = op(run, out[seg]) (out[seg] was written by the
// block holding the segment's end and covers the later elements); other
// warps exit. The run is cut into 32 * GS_FIX_UNROLL contiguous parts, part
// lane * GS_FIX_UNROLL + u folded by lane ``lane`` into accumulator u (many
// independent loads in flight: a single huge segment makes one run of every
// tile); parts are then combined in order, within the lane and by an
// order-preserving warp tree. Every combination keeps the earlier elements
// on the left, so argmin/argmax keep the first extreme element, and the
// association is fixed: deterministic.
// Preconditions: launched after gs_segment_reduce with the same tiles;
// carry_seg entries equal to n_segments mean "no open segment". Does
// nothing when gs_segment_reduce flagged the launch (*flag != 0: the
// fallback computes every output).
#define GS_FIX_UNROLL 8
// The fix-up of the run of carries that starts at tile t (nothing when t
// does not start one); every lane of the warp calls it with the same t.
template <typename T, int OP>
__device__ __forceinline__ void gs_segment_fixup_run(
    const long long* __restrict__ carry_seg,
    const typename gs_seg_policy<T, OP>::acc_t* __restrict__ carry_val, long long t, long long n_tiles,
    long long width, long long n_segments, const T* __restrict__ values,
    typename gs_seg_policy<T, OP>::out_t* __restrict__ out, int lane) {
    typedef gs_seg_policy<T, OP> P;
    typedef typename P::acc_t A;
    const P op = P();
    const long long seg = carry_seg[t];
    if (seg < 0 || seg >= n_segments) return;
    if (t > 0 && carry_seg[t - 1] == seg) return;  // not the first tile of the run
    const long long end = gs_upper_bound<long long>(carry_seg, t + 1, n_tiles, seg);
    const long long n_parts = static_cast<long long>(GS_WARP) * GS_FIX_UNROLL;
    const long long part_len = (end - t + n_parts - 1) / n_parts;
    const long long lane_base = t + static_cast<long long>(lane) * GS_FIX_UNROLL * part_len;
    for (long long c = blockIdx.y; c < width; c += gridDim.y) {
        A acc[GS_FIX_UNROLL];
#pragma unroll
        for (int u = 0; u < GS_FIX_UNROLL; ++u) acc[u] = P::identity();
        for (long long j = 0; j < part_len; ++j) {
#pragma unroll
            for (int u = 0; u < GS_FIX_UNROLL; ++u) {
                const long long idx = lane_base + u * part_len + j;
                if (idx < end) acc[u] = op(acc[u], carry_val[idx * width + c]);
            }
        }
        A v = acc[0];
#pragma unroll
        for (int u = 1; u < GS_FIX_UNROLL; ++u) v = op(v, acc[u]);
        v = gs_warp_reduce<A, P>(v, op);
        if (lane == 0) {
            const long long at = seg * width + c;
            out[at] = P::result(op(v, P::reload(out[at], values, width, c)));
        }
    }
}

template <typename T, int OP>
__global__ void __launch_bounds__(256) gs_segment_reduce_fixup(
    const long long* __restrict__ carry_seg,
    const typename gs_seg_policy<T, OP>::acc_t* __restrict__ carry_val, long long n_tiles,
    long long width, long long n_segments, const T* __restrict__ values,
    typename gs_seg_policy<T, OP>::out_t* __restrict__ out, const int* __restrict__ flag) {
    if (*flag != 0) return;  // uniform over the grid
    const int lane = static_cast<int>(gs_lane_id());
    const long long n_warps = gs_grid_stride() / GS_WARP;
    // t is uniform over the warp (the stride is a multiple of 32 threads).
    for (long long t = gs_global_thread() / GS_WARP; t < n_tiles; t += n_warps) {
        gs_segment_fixup_run<T, OP>(carry_seg, carry_val, t, n_tiles, width, n_segments, values, out, lane);
    }
}

// gs_segment_reduce_fallback: out[j, c] = op over positions p in the clipped
// range [lo, max(lo, hi)) of segment j (lo, hi = starts[j], starts[j + 1]
// clipped into [0, n_pos]) of values[row(p), c], row(p) = perm[p] clipped
// into [0, m) (or p); the identity for an empty range, and for every
// segment when m == 0 (nothing to read).
//
// Thread mapping: one thread per output element (j, c), c fastest
// (coalesced writes), grid-stride; it folds its range in position order, so
// argmin / argmax keep the first extreme element.
// Runs only when *flag != 0: gs_segment_reduce found starts that are not
// non-decreasing (or the launcher found nothing to read). Every other
// thread exits after one load, so the launch costs next to nothing on
// valid input. Ranges of such starts may overlap: the work is the sum of
// their lengths (each bounded by n_pos).
template <typename T, int OP>
__global__ void __launch_bounds__(256) gs_segment_reduce_fallback(
    const T* __restrict__ values, long long m, long long width, const long long* __restrict__ starts,
    long long n_segments, const long long* __restrict__ perm, long long n_pos, const int* __restrict__ flag,
    typename gs_seg_policy<T, OP>::out_t* __restrict__ out) {
    typedef gs_seg_policy<T, OP> P;
    typedef typename P::acc_t A;
    const P op = P();
    if (*flag == 0) return;  // uniform over the grid
    const long long total = n_segments * width;
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long t = gs_global_thread(); t < total; t += stride) {
        const long long j = t / width;
        const long long c = t - j * width;
        long long lo, hi;
        gs_row_range<long long>(starts, j, n_pos, lo, hi);
        if (m <= 0) hi = lo;
        A acc = P::identity();
        for (long long p = lo; p < hi; ++p) {
            const long long row = perm != nullptr ? gs_clip_index(perm[p], m) : p;
            acc = op(acc, P::lift(values[row * width + c], row));
        }
        out[t] = P::result(acc);
    }
}

#ifdef GPUSPARSE_INSTANTIATE_ALL
#define GS_INST_KEYS(K)                                                                        \
    template __global__ void gs_sortedness<K>(const K*, long long, int, int*);                \
    template __global__ void gs_segment_head_counts<K>(const K*, long long, int, long long*); \
    template __global__ void gs_segment_ids_scan<K>(const K*, long long, int, const long long*, long long*);
GS_INST_KEYS(long long)
GS_INST_KEYS(int)

#define GS_INST_REDUCE(T, OP)                                                                     \
    template __global__ void gs_segment_reduce<T, OP>(                                           \
        const T*, long long, long long, const long long*, long long, const long long*, long long, \
        int, int, gs_seg_policy<T, OP>::out_t*, long long*, gs_seg_policy<T, OP>::acc_t*, int*);  \
    template __global__ void gs_segment_reduce_fixup<T, OP>(                                     \
        const long long*, const gs_seg_policy<T, OP>::acc_t*, long long, long long, long long,   \
        const T*, gs_seg_policy<T, OP>::out_t*, const int*);                                     \
    template __global__ void gs_segment_reduce_fallback<T, OP>(                                  \
        const T*, long long, long long, const long long*, long long, const long long*, long long, \
        const int*, gs_seg_policy<T, OP>::out_t*);
#define GS_INST_REDUCE_ALL_OPS(T)   \
    GS_INST_REDUCE(T, GS_OP_SUM)    \
    GS_INST_REDUCE(T, GS_OP_PROD)   \
    GS_INST_REDUCE(T, GS_OP_MIN)    \
    GS_INST_REDUCE(T, GS_OP_MAX)    \
    GS_INST_REDUCE(T, GS_OP_ANY)    \
    GS_INST_REDUCE(T, GS_OP_ALL)    \
    GS_INST_REDUCE(T, GS_OP_ARGMIN) \
    GS_INST_REDUCE(T, GS_OP_ARGMAX)
GS_INST_REDUCE_ALL_OPS(bool)
GS_INST_REDUCE_ALL_OPS(signed char)
GS_INST_REDUCE_ALL_OPS(unsigned char)
GS_INST_REDUCE_ALL_OPS(short)
GS_INST_REDUCE_ALL_OPS(unsigned short)
GS_INST_REDUCE_ALL_OPS(int)
GS_INST_REDUCE_ALL_OPS(unsigned int)
GS_INST_REDUCE_ALL_OPS(long long)
GS_INST_REDUCE_ALL_OPS(unsigned long long)
GS_INST_REDUCE_ALL_OPS(float)
GS_INST_REDUCE_ALL_OPS(double)
GS_INST_REDUCE_ALL_OPS(gs_complex64)
GS_INST_REDUCE_ALL_OPS(gs_complex128)
#endif
