// gpusparse CUDA kernels: stable LSD radix sort of (key, payload) pairs.
//
// Scheme (one "reduce-then-scan" round per 8-bit digit, least significant
// first, over only the low key_bits bits of the keys):
//
//   pass 0:  gs_radix_upsweep   per-tile digit counts of digit 0, plus the
//                               global digit totals of EVERY pass (one read
//                               of the input keys serves both)
//            gs_radix_plan      one block: a pass whose digit is the same for
//                               all n keys moves nothing and is skipped; it
//                               picks each remaining pass's source and
//                               destination buffer so that the LAST pass
//                               lands in buffer A (the returned output)
//   pass p:  gs_radix_upsweep   per-tile counts of digit p (p > 0), written
//                               digit-major: counts[digit * n_tiles + tile]
//            cumsum (CuPy)      inclusive scan of that small table
//            gs_radix_scatter   stable scatter of keys and payloads
//   finally: gs_radix_finalize  copies the input into A when every pass was
//                               skipped (the keys were already in order)
//
// Everything data-dependent (which passes run, where they read and write) is
// decided on the device from the plan array: the host never synchronises.
// Every key is clipped into [0, key_max] as it is loaded (gs_radix_key), so
// keys outside the range the sort was asked for (negative ones, ones past
// 2**key_bits) are sorted as the nearest key inside it and written out
// clipped: the output is always sorted, and its payloads a permutation of
// the input's.
// Buffers: IN (the caller's arrays, read only), A (the output), B (scratch,
// only needed with two passes or more). Plan code of a pass: -1 when
// skipped, else src * 4 + dst with src in {0: IN, 1: A, 2: B} and dst in
// {1: A, 2: B}; plan[n_passes] is the number of passes that run.

#include "common.cuh"

#define GS_SORT_THREADS 256
#define GS_SORT_WARPS 8
#define GS_SORT_ITEMS 16
#define GS_SORT_TILE 4096  // GS_SORT_THREADS * GS_SORT_ITEMS
#define GS_RADIX_BITS 8
#define GS_RADIX 256
#define GS_SORT_MAX_PASSES 8

// A key as the sort sees it: clipped into [0, key_max].
template <typename K>
__device__ __forceinline__ K gs_radix_key(K key, long long key_max) {
    return static_cast<K>(gs_clamp(static_cast<long long>(key), 0, key_max));
}

template <typename K>
__device__ __forceinline__ int gs_radix_digit(K key, int shift) {
    return static_cast<int>((static_cast<unsigned long long>(key) >> shift) & (GS_RADIX - 1));
}

// gs_radix_upsweep: per-tile digit histogram of one pass.
//
// Thread mapping: one block of 256 threads per tile of GS_SORT_TILE keys
// (tiles blockIdx.x + j * gridDim.x, 64-bit); thread t reads keys tile * TILE + j * 256 + t for j < 16 (coalesced) and
// adds runs of equal digits to a shared-memory histogram (see below).
// Output: counts[d * n_tiles + tile] = number of keys of this tile whose
// digit ``pass`` is d (of the key clipped into [0, key_max]). When ``totals`` is not null (pass 0 only) the block
// also adds its counts of every pass's digit to totals[p * 256 + d].
// Preconditions: n_tiles = ceil(n / TILE); any 1-D grid of GS_SORT_THREADS
// threads; n >= 1; for pass > 0, ``plan`` was written by
// gs_radix_plan (the block exits at once for a skipped pass, leaving its
// counts stale; the scatter of that pass skips too).
template <typename K>
__global__ void __launch_bounds__(GS_SORT_THREADS) gs_radix_upsweep(
    const K* __restrict__ keys_in, const K* __restrict__ keys_a, const K* __restrict__ keys_b,
    long long n, long long key_max, int pass, int n_passes, const int* __restrict__ plan,
    long long* __restrict__ counts, long long n_tiles, unsigned long long* __restrict__ totals) {
    __shared__ int s_hist[GS_SORT_MAX_PASSES * GS_RADIX];

    const K* src = keys_in;
    if (pass > 0) {
        const int code = plan[pass];
        if (code < 0) return;  // uniform over the block: the pass is skipped
        const int s = code >> 2;
        src = s == 0 ? keys_in : (s == 1 ? keys_a : keys_b);
    }
    const bool all_passes = (pass == 0 && totals != nullptr);
    const int first = all_passes ? 0 : pass;
    const int n_digits = all_passes ? n_passes : 1;

    for (long long tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
        for (int x = threadIdx.x; x < n_digits * GS_RADIX; x += GS_SORT_THREADS) s_hist[x] = 0;
        __syncthreads();

        // Each thread counts runs of equal digits in registers and flushes a run
        // with one shared atomic: a digit that is the same for most keys (the
        // high digits of small keys, sorted input) costs one atomic per thread,
        // not one per key on the same address.
        int last[GS_SORT_MAX_PASSES];
        int run[GS_SORT_MAX_PASSES];
#pragma unroll
        for (int p = 0; p < GS_SORT_MAX_PASSES; ++p) {
            last[p] = 0;
            run[p] = 0;
        }
        const long long base = tile * GS_SORT_TILE;
        for (int j = 0; j < GS_SORT_ITEMS; ++j) {
            const long long idx = base + j * GS_SORT_THREADS + threadIdx.x;
            if (idx >= n) break;
            const K key = gs_radix_key<K>(src[idx], key_max);
#pragma unroll
            for (int p = 0; p < GS_SORT_MAX_PASSES; ++p) {
                if (p < n_digits) {
                    const int digit = gs_radix_digit<K>(key, GS_RADIX_BITS * (first + p));
                    if (run[p] != 0 && digit != last[p]) {
                        atomicAdd(&s_hist[p * GS_RADIX + last[p]], run[p]);
                        run[p] = 0;
                    }
                    last[p] = digit;
                    ++run[p];
                }
            }
        }
#pragma unroll
        for (int p = 0; p < GS_SORT_MAX_PASSES; ++p) {
            if (run[p] != 0) atomicAdd(&s_hist[p * GS_RADIX + last[p]], run[p]);
        }
        __syncthreads();

        const int d = threadIdx.x;  // GS_SORT_THREADS == GS_RADIX
        counts[static_cast<long long>(d) * n_tiles + tile] = s_hist[d];
        if (all_passes) {
            for (int p = 0; p < n_passes; ++p) {
                const int c = s_hist[p * GS_RADIX + d];
                if (c != 0) atomicAdd(&totals[p * GS_RADIX + d], static_cast<unsigned long long>(c));
            }
        }
        __syncthreads();  // s_hist is cleared for the next tile
    }
}

// gs_radix_plan: decides which passes run and where each reads and writes.
//
// Thread mapping: a single block of GS_RADIX threads, thread d looks at
// digit d of every pass; thread 0 then writes the plan sequentially.
// Preconditions: totals holds the global digit counts of n >= 1 keys for
// 1 <= n_passes <= GS_SORT_MAX_PASSES passes; plan has n_passes + 1 ints.
__global__ void __launch_bounds__(GS_RADIX) gs_radix_plan(
    const unsigned long long* __restrict__ totals, long long n, int n_passes, int* __restrict__ plan) {
    __shared__ int s_trivial[GS_SORT_MAX_PASSES];
    if (threadIdx.x < GS_SORT_MAX_PASSES) s_trivial[threadIdx.x] = 0;
    __syncthreads();
    for (int p = 0; p < n_passes; ++p) {
        // Every thread that sees a full bucket writes the same value 1.
        if (totals[p * GS_RADIX + threadIdx.x] == static_cast<unsigned long long>(n)) s_trivial[p] = 1;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int runs = 0;
        for (int p = 0; p < n_passes; ++p) runs += s_trivial[p] ? 0 : 1;
        int rank = 0;
        int prev_dst = 0;  // the first pass that runs reads the input
        for (int p = 0; p < n_passes; ++p) {
            if (s_trivial[p]) {
                plan[p] = -1;
                continue;
            }
            // Alternate A/B so that the last pass (rank runs - 1) writes A.
            const int dst = ((runs - 1 - rank) % 2 == 0) ? 1 : 2;
            plan[p] = prev_dst * 4 + dst;
            prev_dst = dst;
            ++rank;
        }
        plan[n_passes] = runs;
    }
}

// gs_radix_scatter: one stable counting-sort pass on digit ``pass``.
//
// Thread mapping: one block of 256 threads (8 warps) per tile of
// GS_SORT_TILE keys (tiles blockIdx.x + j * gridDim.x, 64-bit). Warp w owns the contiguous 512-key slice
// [w * 512, (w + 1) * 512) of the tile and walks it 32 keys at a time
// (lane l takes key w * 512 + j * 32 + l at step j, coalesced), so the order
// (warp, j, lane) is the input order. At each step a ballot-per-bit match
// (gs_match_label) groups the lanes with equal digits: a key's rank among the earlier keys of its
// digit in the warp's slice is the warp's running count for that digit
// (s_warp_hist, private to the warp, updated by the group leader between two
// __syncwarp) plus its rank among its peers. A per-digit exclusive scan over
// warps and a block scan over digits give each key its position in the
// tile's digit-sorted order; keys are staged there in shared memory and then
// written out by consecutive threads, so the keys of one digit of a tile go
// to consecutive global addresses (mostly coalesced stores). Payloads
// follow through the same staging buffer.
// Global position = scanned exclusive count at (digit, tile) + position in
// the tile's run of that digit: stable.
// Preconditions: n_tiles = ceil(n / TILE); any 1-D grid of GS_SORT_THREADS;
// ``scanned`` is the inclusive scan of gs_radix_upsweep's counts for this
// pass; ``plan`` from gs_radix_plan. ``vals_in`` may be null: the payload of
// the input is then the input position (the permutation). Keys are clipped
// into [0, key_max] as in gs_radix_upsweep.
template <typename K, typename V>
__global__ void __launch_bounds__(GS_SORT_THREADS) gs_radix_scatter(
    const K* __restrict__ keys_in, const V* __restrict__ vals_in,
    K* keys_a, V* vals_a, K* keys_b, V* vals_b,
    long long n, long long key_max, int pass, const int* __restrict__ plan,
    const long long* __restrict__ scanned, long long n_tiles) {
    __shared__ int s_warp_hist[GS_SORT_WARPS * GS_RADIX];
    __shared__ int s_tile_start[GS_RADIX];
    __shared__ long long s_global[GS_RADIX];
    __shared__ int s_scan[GS_WARP];
    __shared__ unsigned char s_digit[GS_SORT_TILE];
    __shared__ __align__(16) unsigned char s_buf[GS_SORT_TILE * (sizeof(K) > sizeof(V) ? sizeof(K) : sizeof(V))];

    const int code = plan[pass];
    if (code < 0) return;  // uniform over the grid: the pass is skipped
    const int src_code = code >> 2;
    const int dst_code = code & 3;
    const K* src_k = src_code == 0 ? keys_in : (src_code == 1 ? keys_a : keys_b);
    const V* src_v = src_code == 0 ? vals_in : (src_code == 1 ? vals_a : vals_b);
    K* dst_k = dst_code == 1 ? keys_a : keys_b;
    V* dst_v = dst_code == 1 ? vals_a : vals_b;
    const int shift = GS_RADIX_BITS * pass;

    for (long long tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
        for (int x = threadIdx.x; x < GS_SORT_WARPS * GS_RADIX; x += GS_SORT_THREADS) s_warp_hist[x] = 0;
        __syncthreads();

        const unsigned int lane = gs_lane_id();
        const int warp = threadIdx.x / GS_WARP;
        const long long tile_base = tile * GS_SORT_TILE;
        const long long left = n - tile_base;
        const int tile_n = left < GS_SORT_TILE ? static_cast<int>(left) : GS_SORT_TILE;
        int* my_hist = s_warp_hist + warp * GS_RADIX;

        K key[GS_SORT_ITEMS];
        int rank[GS_SORT_ITEMS];
#pragma unroll
        for (int j = 0; j < GS_SORT_ITEMS; ++j) {
            const int off = warp * (GS_WARP * GS_SORT_ITEMS) + j * GS_WARP + static_cast<int>(lane);
            const bool valid = off < tile_n;
            key[j] = valid ? gs_radix_key<K>(src_k[tile_base + off], key_max) : static_cast<K>(0);
            const int digit = valid ? gs_radix_digit<K>(key[j], shift) : GS_RADIX;
            // 9 label bits: the digit and the "invalid lane" bit.
            const unsigned int peers = gs_match_label<GS_RADIX_BITS + 1>(static_cast<unsigned int>(digit));
            int old = 0;
            if (valid) old = my_hist[digit];
            __syncwarp();  // every peer has read the count before the leader bumps it
            if (valid && lane == static_cast<unsigned int>(__ffs(peers) - 1)) {
                my_hist[digit] = old + __popc(peers);
            }
            __syncwarp();  // the bump is visible to the next step
            rank[j] = old + __popc(peers & gs_lanemask_lt());
        }
        __syncthreads();

        {
            const int d = threadIdx.x;  // GS_SORT_THREADS == GS_RADIX
            int running = 0;
#pragma unroll
            for (int w = 0; w < GS_SORT_WARPS; ++w) {
                const int c = s_warp_hist[w * GS_RADIX + d];
                s_warp_hist[w * GS_RADIX + d] = running;  // exclusive over warps
                running += c;
            }
            int total;
            const int incl = gs_block_inclusive_sum<int>(running, s_scan, total);
            s_tile_start[d] = incl - running;
            const long long at = static_cast<long long>(d) * n_tiles + tile;
            s_global[d] = at > 0 ? scanned[at - 1] : 0;
        }
        __syncthreads();

        K* s_keys = reinterpret_cast<K*>(s_buf);
#pragma unroll
        for (int j = 0; j < GS_SORT_ITEMS; ++j) {
            const int off = warp * (GS_WARP * GS_SORT_ITEMS) + j * GS_WARP + static_cast<int>(lane);
            if (off < tile_n) {
                const int digit = gs_radix_digit<K>(key[j], shift);
                const int pos = s_tile_start[digit] + my_hist[digit] + rank[j];
                s_keys[pos] = key[j];
                s_digit[pos] = static_cast<unsigned char>(digit);
                rank[j] = pos;
            }
        }
        __syncthreads();
        for (int p = threadIdx.x; p < tile_n; p += GS_SORT_THREADS) {
            const int digit = s_digit[p];
            dst_k[s_global[digit] + (p - s_tile_start[digit])] = s_keys[p];
        }
        __syncthreads();  // s_buf is reused for the payloads

        V* s_vals = reinterpret_cast<V*>(s_buf);
#pragma unroll
        for (int j = 0; j < GS_SORT_ITEMS; ++j) {
            const int off = warp * (GS_WARP * GS_SORT_ITEMS) + j * GS_WARP + static_cast<int>(lane);
            if (off < tile_n) {
                const long long idx = tile_base + off;
                s_vals[rank[j]] = src_v != nullptr ? src_v[idx] : static_cast<V>(idx);
            }
        }
        __syncthreads();
        for (int p = threadIdx.x; p < tile_n; p += GS_SORT_THREADS) {
            const int digit = s_digit[p];
            dst_v[s_global[digit] + (p - s_tile_start[digit])] = s_vals[p];
        }
        __syncthreads();  // shared memory is reused by the next tile
    }
}

// gs_radix_finalize: output = input when no pass ran.
//
// Thread mapping: one thread per element (grid-stride, 64-bit index); every
// thread exits at once unless plan[n_passes] == 0.
// Preconditions: plan from gs_radix_plan; vals_in may be null (payload =
// position).
template <typename K, typename V>
__global__ void __launch_bounds__(256) gs_radix_finalize(
    const K* __restrict__ keys_in, const V* __restrict__ vals_in,
    K* __restrict__ keys_a, V* __restrict__ vals_a,
    long long n, long long key_max, int n_passes, const int* __restrict__ plan) {
    if (plan[n_passes] != 0) return;
    for (long long i = gs_global_thread(); i < n; i += gs_grid_stride()) {
        keys_a[i] = gs_radix_key<K>(keys_in[i], key_max);
        vals_a[i] = vals_in != nullptr ? vals_in[i] : static_cast<V>(i);
    }
}

#ifdef GPUSPARSE_INSTANTIATE_ALL
template __global__ void gs_radix_upsweep<long long>(
    const long long*, const long long*, const long long*, long long, long long, int, int, const int*,
    long long*, long long, unsigned long long*);
template __global__ void gs_radix_scatter<long long, long long>(
    const long long*, const long long*, long long*, long long*, long long*, long long*,
    long long, long long, int, const int*, const long long*, long long);
template __global__ void gs_radix_finalize<long long, long long>(
    const long long*, const long long*, long long*, long long*, long long, long long, int, const int*);
#endif
