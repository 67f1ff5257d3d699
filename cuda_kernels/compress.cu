// gpusparse CUDA kernels: compress (sorted rows -> indptr), expand
// (indptr -> rows) and the structure check of a CSR matrix.
//
// Both are vectorised binary searches, one thread per OUTPUT entry, so the
// work per thread stays bounded whatever the distribution: long runs of
// empty rows (which a per-element "write every row in my gap" kernel hands
// to a single thread) and very long rows cost the same. Each block first
// narrows the search window: two threads binary-search the global array for
// the block's first and last output, after which every thread searches only
// that window (a few steps, in L1), so the traffic stays close to one read
// of the input plus one write of the output.

#include "common.cuh"

#define GS_CMP_THREADS 256

// gs_compress: indptr[r] = first position p with rows[p] >= r (n if none),
// for r in [0, n_rows]; indptr[0] = 0 and indptr[n_rows] = n always.
//
// Thread mapping: one thread per indptr entry r, tiles of 256 entries, one
// block per tile (a block loops over tiles blockIdx.x + j * gridDim.x when
// the grid is smaller, 64-bit); threads 0 and 32 of each block find the window
// [lower_bound(r_first), lower_bound(r_last)] that holds every answer of
// the block.
// Preconditions: rows (n,) sorted ascending (n may be 0); any 1-D grid of
// 256-thread blocks; the answers (<= n) fit in I. Rows outside [0, n_rows)
// count in the nearest row (the fixed first and last entries: the
// histogram of the clipped rows); unsorted rows give some pointers in
// [0, n], every entry written once (binary searches stay in their window).
// R: the type of rows (segment ids may be int32).
template <typename R, typename I>
__global__ void __launch_bounds__(GS_CMP_THREADS) gs_compress(
    const R* __restrict__ rows, long long n, long long n_rows, I* __restrict__ indptr) {
    __shared__ long long s_window[2];
    const long long n_tiles = n_rows / GS_CMP_THREADS + 1;  // tiles of the n_rows + 1 entries
    for (long long tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
        const long long r_first = tile * GS_CMP_THREADS;
        const long long r_last = min(r_first + GS_CMP_THREADS - 1, n_rows);
        if (threadIdx.x == 0) s_window[0] = gs_lower_bound<R>(rows, 0, n, r_first);
        if (threadIdx.x == GS_WARP) s_window[1] = gs_lower_bound<R>(rows, 0, n, r_last);
        __syncthreads();
        const long long r = r_first + threadIdx.x;
        if (r <= n_rows) {
            const long long p =
                r == 0 ? 0 : (r == n_rows ? n : gs_lower_bound<R>(rows, s_window[0], s_window[1], r));
            indptr[r] = static_cast<I>(p);
        }
        __syncthreads();  // s_window is rewritten for the next tile
    }
}

// gs_expand: rows[p] = r for indptr[r] <= p < indptr[r + 1], i.e. the last
// r with indptr[r] <= p (empty rows are skipped over).
//
// Thread mapping: one thread per output position p, tiles of 256 positions
// looped over as in gs_compress (64-bit); threads 0 and 32 of each block find the window
// [upper_bound(p_first), upper_bound(p_last)] of indptr that holds every
// answer of the block.
// Preconditions: indptr (n_rows + 1,) non-decreasing from 0 to nnz; nnz >= 1.
// Any other indptr gives every position a row in [0, n_rows) (0 when
// n_rows == 0): pointers are compared with positions in [0, nnz), so they
// act clipped into [0, nnz]; positions before indptr[0] go to the first row
// and those past indptr[n_rows] to the last (the searches are bounded by
// indptr's n_rows + 1 entries whatever their order).
template <typename I>
__global__ void __launch_bounds__(GS_CMP_THREADS) gs_expand(
    const I* __restrict__ indptr, long long n_rows, long long nnz, long long* __restrict__ rows) {
    __shared__ long long s_window[2];
    const long long n_tiles = (nnz + GS_CMP_THREADS - 1) / GS_CMP_THREADS;
    for (long long tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
        const long long p_first = tile * GS_CMP_THREADS;
        const long long p_last = min(p_first + GS_CMP_THREADS - 1, nnz - 1);
        if (threadIdx.x == 0) s_window[0] = gs_upper_bound<I>(indptr, 0, n_rows + 1, p_first);
        if (threadIdx.x == GS_WARP) s_window[1] = gs_upper_bound<I>(indptr, 0, n_rows + 1, p_last);
        __syncthreads();
        const long long p = p_first + threadIdx.x;
        if (p < nnz) {
            // upper_bound >= 1 when indptr[0] <= p (always, for a valid indptr).
            const long long r = gs_upper_bound<I>(indptr, s_window[0], s_window[1], p) - 1;
            rows[p] = gs_clamp(r, 0, max(n_rows - 1, 0LL));
        }
        __syncthreads();  // s_window is rewritten for the next tile
    }
}

// gs_csr_check: *invalid = 1 unless (indptr, indices) is a canonical CSR
// structure, the one cuSPARSE assumes and does not check: indptr[0] == 0,
// indptr[n_rows] == nnz, indptr non-decreasing, every index in [0, n_cols),
// and the indices strictly increasing within each row (sorted, unique:
// SpGEMM relies on it, and a read past a buffer follows from a bad pointer).
//
// Thread mapping: grid-stride over max(n_rows + 1, nnz) items (64-bit
// index); item i checks pointer i (against i + 1), index i, and the pair
// (i, i + 1) of entries. A pair that does not increase is allowed only
// where a row starts at i + 1, which a binary search of indptr (bounded by
// its n_rows + 1 entries whatever their order, so reads stay inside it)
// decides; the search runs only at such pairs, at most one per row of a
// valid structure. A thread that finds a violation stores 1 (every writer
// stores the same value, so the race is benign); nothing is written for a
// valid structure.
// Preconditions: indptr has n_rows + 1 entries, indices nnz; *invalid is 0
// before the launch (the launcher zeroes it). Nothing else: any values are
// read inside the buffers.
template <typename I>
__global__ void __launch_bounds__(GS_CMP_THREADS) gs_csr_check(
    const I* __restrict__ indptr, long long n_rows, const I* __restrict__ indices, long long nnz,
    long long n_cols, int* __restrict__ invalid) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    const long long n_items = max(n_rows + 1, nnz);
    bool bad = false;
    for (long long i = gs_global_thread(); i < n_items; i += stride) {
        if (i <= n_rows) {
            const long long p = indptr[i];
            bad |= (i == 0 && p != 0) || (i == n_rows && p != nnz) || (i < n_rows && indptr[i + 1] < p);
        }
        if (i < nnz) {
            const long long c = indices[i];
            bad |= c < 0 || c >= n_cols;
            if (i + 1 < nnz && static_cast<long long>(indices[i + 1]) <= c) {
                // Allowed only across a row boundary: some row r starts at i + 1.
                const long long r = gs_lower_bound<I>(indptr, 0, n_rows + 1, i + 1);
                bad |= r > n_rows || static_cast<long long>(indptr[r]) != i + 1;
            }
        }
    }
    if (bad) *invalid = 1;
}

#ifdef GPUSPARSE_INSTANTIATE_ALL
template __global__ void gs_compress<long long, int>(const long long*, long long, long long, int*);
template __global__ void gs_compress<long long, long long>(const long long*, long long, long long, long long*);
template __global__ void gs_compress<int, long long>(const int*, long long, long long, long long*);
template __global__ void gs_expand<int>(const int*, long long, long long, long long*);
template __global__ void gs_expand<long long>(const long long*, long long, long long, long long*);
template __global__ void gs_csr_check<int>(const int*, long long, const int*, long long, long long, int*);
template __global__ void gs_csr_check<long long>(const long long*, long long, const long long*, long long, long long,
                                                 int*);
#endif
