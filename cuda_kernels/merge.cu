// gpusparse CUDA kernels: merging two sorted key arrays (union / intersection
// plans of binary elementwise operations).
//
// Inputs are two strictly increasing key arrays a (na) and b (nb). The merge
// of a and b (a first on ties) is the "merge path" through the na x nb grid
// (Odeh et al., "Merge Path - parallel merging made simple", 2012; Green,
// McColl and Bader, "GPU merge path", 2012). Diagonal d of the grid is cut
// by one binary search; a cut that would separate an equal pair a[i-1] ==
// b[j] is moved one step so that the pair stays together (the pair becomes
// one output). The work is split into tiles of GS_MERGE_TILE diagonals, one
// block each:
//
//   gs_merge_partition  cuts at every tile boundary (global binary search)
//   gs_merge_count      outputs per tile (block reduction)
//   (exclusive scan of the tile counts: done by the launcher on the device)
//   gs_merge_write      every output: key, position in a, position in b
//                       (-1 when absent), from the tile's scanned offset
//
// Within a tile the block stages its a and b ranges in shared memory and
// every thread cuts its own GS_MERGE_ITEMS diagonals again with a binary
// search there, so all threads merge the same number of keys however the
// keys interleave. Nothing is synchronised with the host: the total output
// count stays on the device.
//
// HOW: 0 = union (every key once), 1 = intersection (keys in both).
//
// Keys that are not strictly increasing (the memory-safety contract): every
// binary search stays inside its range, so cuts stay inside [0, na] x
// [0, nb]; a tile whose two cuts do not follow each other gets an empty
// range, and one whose range would not fit the shared staging is cut to
// GS_MERGE_SPAN keys; each thread's merge walks at most its ranges; outputs
// past the capacity are dropped and the launcher clips the count to it.
// The result is then some merge of the two arrays (unspecified), computed
// inside the buffers.

#include "common.cuh"

#define GS_MERGE_THREADS 256
#define GS_MERGE_ITEMS 8
#define GS_MERGE_TILE 2048  // GS_MERGE_THREADS * GS_MERGE_ITEMS
// A tile's ranges hold at most TILE + 1 keys (a moved cut adds one b key).
#define GS_MERGE_SPAN (GS_MERGE_TILE + 2)

// The cut of diagonal ``diag`` of the merge of a[0:na] and b[0:nb], a first
// on ties, moved past b[j] when a[i-1] == b[j]. Returns i; *j_out = j.
template <typename K>
__device__ __forceinline__ long long gs_merge_cut(const K* a, long long na, const K* b, long long nb,
                                                  long long diag, long long* j_out) {
    long long lo = max(0LL, diag - nb);
    long long hi = min(diag, na);
    while (lo < hi) {
        const long long mid = lo + ((hi - lo) >> 1);
        if (a[mid] <= b[diag - mid - 1]) lo = mid + 1; else hi = mid;
    }
    long long j = diag - lo;
    if (lo > 0 && j < nb && a[lo - 1] == b[j]) ++j;
    *j_out = j;
    return lo;
}

// Merge a[i:i_end] with b[j:j_end] (both in shared memory, positions local
// to the tile); count the outputs, and write them when ``write`` (global
// positions a_base + i, b_base + j) from ``out``, dropping any at or past
// ``capacity``. Each step advances i or j: at most (i_end - i) + (j_end - j)
// steps whatever the keys.
template <typename K, int HOW, bool WRITE>
__device__ __forceinline__ long long gs_merge_run(const K* a, long long i, long long i_end,
                                                  const K* b, long long j, long long j_end,
                                                  long long a_base, long long b_base, long long out,
                                                  long long capacity, K* keys, long long* a_index,
                                                  long long* b_index) {
    long long n = 0;
    while (i < i_end || j < j_end) {
        const bool write = WRITE && out + n < capacity;
        if (j >= j_end || (i < i_end && a[i] < b[j])) {
            if (HOW == 0) {
                if (write) {
                    keys[out + n] = a[i];
                    a_index[out + n] = a_base + i;
                    b_index[out + n] = -1;
                }
                ++n;
            }
            ++i;
        } else if (i >= i_end || b[j] < a[i]) {
            if (HOW == 0) {
                if (write) {
                    keys[out + n] = b[j];
                    a_index[out + n] = -1;
                    b_index[out + n] = b_base + j;
                }
                ++n;
            }
            ++j;
        } else {
            if (write) {
                keys[out + n] = a[i];
                a_index[out + n] = a_base + i;
                b_index[out + n] = b_base + j;
            }
            ++n;
            ++i;
            ++j;
        }
    }
    return n;
}

// gs_merge_partition: the cut of every tile boundary.
//
// Thread mapping: one thread per boundary t in [0, n_tiles] (grid-stride);
// boundary t is diagonal min(t * GS_MERGE_TILE, na + nb).
// Preconditions: a, b strictly increasing; cuts has 2 * (n_tiles + 1)
// entries: cuts[2t] = i, cuts[2t + 1] = j.
template <typename K>
__global__ void __launch_bounds__(256) gs_merge_partition(
    const K* __restrict__ a, long long na, const K* __restrict__ b, long long nb, long long n_tiles,
    long long* __restrict__ cuts) {
    for (long long t = gs_global_thread(); t <= n_tiles; t += gs_grid_stride()) {
        const long long diag = min(t * GS_MERGE_TILE, na + nb);
        long long j;
        const long long i = gs_merge_cut<K>(a, na, b, nb, diag, &j);
        cuts[2 * t] = i;
        cuts[2 * t + 1] = j;
    }
}

// Stage the tile's ranges a[i0:i1], b[j0:j1] in shared memory and cut the
// calling thread's share of them; returns false for a thread with no work.
template <typename K>
__device__ __forceinline__ void gs_merge_thread_range(
    const K* __restrict__ a, const K* __restrict__ b, const long long* __restrict__ cuts, long long t,
    K* s_keys, long long& i0, long long& j0, long long& ti, long long& ti_end, long long& tj,
    long long& tj_end, long long& na_t) {
    i0 = cuts[2 * t];
    j0 = cuts[2 * t + 1];
    // For increasing keys the cuts of consecutive boundaries follow each
    // other and a tile holds at most GS_MERGE_SPAN keys; the clamps keep any
    // other keys inside the staging buffer.
    na_t = gs_clamp(cuts[2 * t + 2] - i0, 0, GS_MERGE_SPAN);
    const long long nb_t = gs_clamp(cuts[2 * t + 3] - j0, 0, GS_MERGE_SPAN - na_t);
    for (long long x = threadIdx.x; x < na_t; x += blockDim.x) s_keys[x] = a[i0 + x];
    for (long long x = threadIdx.x; x < nb_t; x += blockDim.x) s_keys[na_t + x] = b[j0 + x];
    __syncthreads();
    const K* sa = s_keys;
    const K* sb = s_keys + na_t;
    const long long total = na_t + nb_t;
    const long long d0 = min(static_cast<long long>(threadIdx.x) * GS_MERGE_ITEMS, total);
    const long long d1 = min(d0 + GS_MERGE_ITEMS, total);
    ti = gs_merge_cut<K>(sa, na_t, sb, nb_t, d0, &tj);
    ti_end = gs_merge_cut<K>(sa, na_t, sb, nb_t, d1, &tj_end);
    // The last thread's end is the tile's end, whatever the cut says.
    if (threadIdx.x == blockDim.x - 1) {
        ti_end = na_t;
        tj_end = nb_t;
    }
}

// gs_merge_count: the number of outputs of every tile.
//
// Thread mapping: one block of 256 threads per tile t (t = blockIdx.x, then
// t + gridDim.x, ... when the grid is smaller than n_tiles, 64-bit); thread k
// merges the tile's diagonals [8k, 8k + 8) (cut again in shared memory);
// block sum; thread 0 writes counts[t].
// Preconditions: cuts from gs_merge_partition for n_tiles tiles; any 1-D grid.
template <typename K, int HOW>
__global__ void __launch_bounds__(GS_MERGE_THREADS) gs_merge_count(
    const K* __restrict__ a, const K* __restrict__ b, const long long* __restrict__ cuts,
    long long n_tiles, long long* __restrict__ counts) {
    __shared__ K s_keys[GS_MERGE_SPAN];
    __shared__ long long s_warp[GS_WARP];
    for (long long t = blockIdx.x; t < n_tiles; t += gridDim.x) {
        long long i0, j0, ti, ti_end, tj, tj_end, na_t;
        gs_merge_thread_range<K>(a, b, cuts, t, s_keys, i0, j0, ti, ti_end, tj, tj_end, na_t);
        const long long n = gs_merge_run<K, HOW, false>(s_keys, ti, ti_end, s_keys + na_t, tj, tj_end, 0, 0, 0,
                                                        0, nullptr, nullptr, nullptr);
        const long long total = gs_block_sum<long long>(n, s_warp);
        if (threadIdx.x == 0) counts[t] = total;
        __syncthreads();  // s_keys is restaged for the next tile
    }
}

// gs_merge_write: every output of every tile.
//
// Thread mapping: as gs_merge_count; each thread counts its outputs, a
// block exclusive scan gives its offset after offsets[tile], then it merges
// again and writes keys[p], a_index[p], b_index[p].
// Preconditions: offsets[t] = number of outputs of the tiles before t (an
// exclusive scan of gs_merge_count's counts); outputs sized for ``capacity``
// outputs (na + nb for a union, min(na, nb) for an intersection: every
// output for strictly increasing keys; outputs past it, which only other
// keys can make, are dropped).
template <typename K, int HOW>
__global__ void __launch_bounds__(GS_MERGE_THREADS) gs_merge_write(
    const K* __restrict__ a, const K* __restrict__ b, const long long* __restrict__ cuts,
    const long long* __restrict__ offsets, long long n_tiles, long long capacity, K* __restrict__ keys,
    long long* __restrict__ a_index, long long* __restrict__ b_index) {
    __shared__ K s_keys[GS_MERGE_SPAN];
    __shared__ long long s_warp[GS_WARP];
    for (long long t = blockIdx.x; t < n_tiles; t += gridDim.x) {
        long long i0, j0, ti, ti_end, tj, tj_end, na_t;
        gs_merge_thread_range<K>(a, b, cuts, t, s_keys, i0, j0, ti, ti_end, tj, tj_end, na_t);
        const K* sa = s_keys;
        const K* sb = s_keys + na_t;
        const long long n = gs_merge_run<K, HOW, false>(sa, ti, ti_end, sb, tj, tj_end, 0, 0, 0,
                                                        0, nullptr, nullptr, nullptr);
        long long block_total;
        const long long inclusive = gs_block_inclusive_sum<long long>(n, s_warp, block_total);
        const long long out = offsets[t] + inclusive - n;
        gs_merge_run<K, HOW, true>(sa, ti, ti_end, sb, tj, tj_end, i0, j0, out, capacity, keys, a_index,
                                   b_index);
        __syncthreads();  // s_keys is restaged for the next tile
    }
}

#ifdef GPUSPARSE_INSTANTIATE_ALL
template __global__ void gs_merge_partition<long long>(const long long*, long long, const long long*, long long,
                                                       long long, long long*);
#define GS_INST_MERGE(HOW)                                                                            \
    template __global__ void gs_merge_count<long long, HOW>(const long long*, const long long*,      \
                                                            const long long*, long long, long long*); \
    template __global__ void gs_merge_write<long long, HOW>(const long long*, const long long*,      \
                                                            const long long*, const long long*,       \
                                                            long long, long long, long long*,         \
                                                            long long*, long long*);
GS_INST_MERGE(0)
GS_INST_MERGE(1)
#endif
