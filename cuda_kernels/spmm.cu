// gpusparse CUDA kernels: CSR times a row-major dense matrix, for what
// cuSPARSE does not take -- integer values (cuSPARSE has no uniform-precision
// integer SpMM) -- and SpMM with a reduction over each row's terms (sum,
// mean, max, min: torch's sparse.mm(..., reduce=)).
//
// A CSR matrix is indptr (m + 1), indices (nnz) of type I (int or long long)
// and data (nnz) of type T. Dense operands are C-contiguous: b is (k, n),
// out is (m, n). Integer arithmetic wraps (gs_add / gs_mul), as NumPy's.
//
// Whatever the values of indptr and indices (the memory-safety contract):
// a row's range is its pointers clipped into [0, nnz], empty when the end
// lies before the start (gs_row_range), and a column index outside [0, k)
// reads the nearest row of b (clipped).

#include "common.cuh"

#define GS_MM_THREADS 256

// Reduction codes of the gs_csr_spmm_reduce_* kernels; the order matches
// gpusparse._kernels.SPMM_REDUCE_OPS.
#define GS_MM_SUM 0
#define GS_MM_MEAN 1
#define GS_MM_MAX 2
#define GS_MM_MIN 3

// The reduction of one output element: identity, combine, and the final
// step (mean divides by the number of terms).
template <typename T, int OP> struct gs_mm_reduce;
template <typename T> struct gs_mm_reduce<T, GS_MM_SUM> {
    static __device__ __forceinline__ T identity() { return gs_zero<T>(); }
    static __device__ __forceinline__ T combine(T acc, T v) { return gs_add<T>(acc, v); }
    static __device__ __forceinline__ T finish(T acc, long long) { return acc; }
};
template <typename T> struct gs_mm_reduce<T, GS_MM_MAX> {
    static __device__ __forceinline__ T identity() { return gs_max<T>::identity(); }
    static __device__ __forceinline__ T combine(T acc, T v) { return gs_max<T>()(acc, v); }
    static __device__ __forceinline__ T finish(T acc, long long) { return acc; }
};
template <typename T> struct gs_mm_reduce<T, GS_MM_MIN> {
    static __device__ __forceinline__ T identity() { return gs_min<T>::identity(); }
    static __device__ __forceinline__ T combine(T acc, T v) { return gs_min<T>()(acc, v); }
    static __device__ __forceinline__ T finish(T acc, long long) { return acc; }
};

// Division by a count, for the mean (inexact types only).
template <typename T> __device__ __forceinline__ T gs_div_count(T v, long long count) {
    return v / static_cast<T>(count);
}
template <> __device__ __forceinline__ gs_complex64 gs_div_count<gs_complex64>(gs_complex64 v, long long count) {
    gs_complex64 r;
    r.re = v.re / static_cast<float>(count);
    r.im = v.im / static_cast<float>(count);
    return r;
}
template <> __device__ __forceinline__ gs_complex128 gs_div_count<gs_complex128>(gs_complex128 v, long long count) {
    gs_complex128 r;
    r.re = v.re / static_cast<double>(count);
    r.im = v.im / static_cast<double>(count);
    return r;
}
template <typename T> struct gs_mm_reduce<T, GS_MM_MEAN> {
    static __device__ __forceinline__ T identity() { return gs_zero<T>(); }
    static __device__ __forceinline__ T combine(T acc, T v) { return gs_add<T>(acc, v); }
    static __device__ __forceinline__ T finish(T acc, long long count) { return gs_div_count<T>(acc, count); }
};

// gs_csr_spmm: out[r, c] = alpha * sum_{p in row r} data[p] * b[indices[p], c]
//                          (+ beta * out[r, c] when use_beta != 0).
//
// Thread mapping: one thread per output element in row-major order
// (t = r * n + c, 64-bit, grid-stride). The n threads of one row read the same row
// entries (broadcast loads); consecutive threads read consecutive elements
// of each row of b (coalesced) and write consecutive elements of out.
// Preconditions: any 1-D grid; indptr (m + 1),
// indices and data (nnz); indices in [0, k), k >= 1; b (k, n) and out
// (m, n) C-contiguous; out is not read when use_beta == 0.
template <typename T, typename I>
__global__ void __launch_bounds__(GS_MM_THREADS) gs_csr_spmm(
    const I* __restrict__ indptr, const I* __restrict__ indices, const T* __restrict__ data, long long nnz,
    const T* __restrict__ b, long long k, T* __restrict__ out, long long m, long long n, T alpha, T beta,
    int use_beta) {
    const long long total = m * n;
    for (long long t = gs_global_thread(); t < total; t += gs_grid_stride()) {
        const long long r = t / n;
        const long long c = t - r * n;
        T acc = gs_zero<T>();
        long long start, end;
        gs_row_range<I>(indptr, r, nnz, start, end);
        for (long long p = start; p < end; ++p) {
            const long long row_b = gs_clip_index(static_cast<long long>(indices[p]), k);
            acc = gs_add<T>(acc, gs_mul<T>(data[p], b[row_b * n + c]));
        }
        T result = gs_mul<T>(alpha, acc);
        if (use_beta) result = gs_add<T>(result, gs_mul<T>(beta, out[t]));
        out[t] = result;
    }
}

// SpMM with a reduction over each row's terms, load-balanced: a row's terms
// are cut into chunks of at most `chunk` entries, so one long row
// (power-law graphs) is spread over many threads instead of serialising one.
//
//   out[r, c] = OP over p in row r of data[p] * b[indices[p], c]
//
// (each product rounded to T first, so integers wrap before max/min compare);
// 0 for a row without entries. Three launches:
//
//   gs_csr_chunk_counts        chunks[r] = ceil(len_r / chunk); spilled[r] =
//                              chunks[r] when it is more than 1, else 0;
//   (exclusive scans on the host side give chunk_ptr and slot_ptr, m + 1 each)
//   gs_csr_spmm_reduce_chunks  one thread per (chunk, column): the chunk's fold;
//                              a row of one chunk is finished into out, the
//                              chunks of longer rows go to partial[slot, c];
//   gs_csr_spmm_reduce_rows    one thread per (row, column) of a row of several
//                              chunks (or none): folds its partials into out.
//
// Thread mapping of the fold kernels: consecutive threads take consecutive
// columns of one chunk or row (coalesced reads of b and writes of out). The
// second fold combines partial results in chunk order, so a sum adds the
// chunks' sums (floating-point rounding differs from one sequential fold).
// Preconditions: as gs_csr_spmm; OP one of GS_MM_*; GS_MM_MEAN only for
// inexact T, GS_MM_MAX / GS_MM_MIN only for real T (NaN propagates, as
// np.maximum / np.minimum); chunk >= 1. The grid and the partials are sized
// by bounds (n_chunk_bound, n_slot_bound) that hold for a monotone indptr;
// where a malformed one's overlapping rows outgrow them, the rows kernel folds
// those rows itself, so every row gets its clipped range's result and nothing
// is read or written outside the buffers (chunk numbers are clipped into
// [0, n_chunk_bound), slots outside [0, n_slot_bound) are never written).

template <typename I>
__global__ void __launch_bounds__(GS_MM_THREADS) gs_csr_chunk_counts(
    const I* __restrict__ indptr, long long nnz, long long m, long long chunk, long long* __restrict__ chunks,
    long long* __restrict__ spilled) {
    for (long long r = gs_global_thread(); r < m; r += gs_grid_stride()) {
        long long lo, hi;
        gs_row_range<I>(indptr, r, nnz, lo, hi);
        const long long count = (hi - lo + chunk - 1) / chunk;
        chunks[r] = count;
        spilled[r] = count > 1 ? count : 0;
    }
}

template <typename T, typename I, int OP>
__global__ void __launch_bounds__(GS_MM_THREADS) gs_csr_spmm_reduce_chunks(
    const I* __restrict__ indptr, const I* __restrict__ indices, const T* __restrict__ data, long long nnz,
    const T* __restrict__ b, long long k, const long long* __restrict__ chunk_ptr,
    const long long* __restrict__ slot_ptr, long long chunk, long long n_chunk_bound, long long n_slot_bound,
    T* __restrict__ partial, T* __restrict__ out, long long m, long long n) {
    typedef gs_mm_reduce<T, OP> R;
    const long long n_chunks = gs_clamp(chunk_ptr[m], 0, n_chunk_bound);
    const long long total = n_chunks * n;
    for (long long t = gs_global_thread(); t < total; t += gs_grid_stride()) {
        const long long q = t / n;
        const long long c = t - q * n;
        const long long r = gs_clamp(gs_upper_bound<long long>(chunk_ptr, 0, m + 1, q) - 1, 0, m - 1);
        const long long first = chunk_ptr[r];
        const long long j = q >= first ? q - first : 0;
        long long lo, hi;
        gs_row_range<I>(indptr, r, nnz, lo, hi);
        const long long p0 = j < (hi - lo) / chunk + 1 ? gs_clamp(lo + j * chunk, lo, hi) : hi;
        const long long p1 = p0 + chunk < hi ? p0 + chunk : hi;
        T acc = R::identity();
        for (long long p = p0; p < p1; ++p) {
            const long long row_b = gs_clip_index(static_cast<long long>(indices[p]), k);
            acc = R::combine(acc, gs_mul<T>(data[p], b[row_b * n + c]));
        }
        if (chunk_ptr[r + 1] - first <= 1) {
            out[r * n + c] = R::finish(acc, hi - lo);
        } else {
            const long long slot = slot_ptr[r] + j;
            if (slot >= 0 && slot < n_slot_bound) partial[slot * n + c] = acc;
        }
    }
}

template <typename T, typename I, int OP>
__global__ void __launch_bounds__(GS_MM_THREADS) gs_csr_spmm_reduce_rows(
    const I* __restrict__ indptr, const I* __restrict__ indices, const T* __restrict__ data, long long nnz,
    const T* __restrict__ b, long long k, const long long* __restrict__ chunk_ptr,
    const long long* __restrict__ slot_ptr, long long n_chunk_bound, long long n_slot_bound,
    const T* __restrict__ partial, T* __restrict__ out, long long m, long long n) {
    typedef gs_mm_reduce<T, OP> R;
    const long long total = m * n;
    for (long long t = gs_global_thread(); t < total; t += gs_grid_stride()) {
        const long long r = t / n;
        const long long c = t - r * n;
        const long long q0 = chunk_ptr[r];
        const long long count = chunk_ptr[r + 1] - q0;
        const long long s0 = slot_ptr[r];
        // Every chunk of the row had a thread (and a slot) in gs_csr_spmm_reduce_chunks: always so
        // for a monotone indptr, whose rows hold nnz entries in all.
        const bool folded = q0 >= 0 && count >= 0 && q0 + count <= n_chunk_bound;
        if (folded && count == 1) continue;  // finished by gs_csr_spmm_reduce_chunks
        long long lo, hi;
        gs_row_range<I>(indptr, r, nnz, lo, hi);
        if (hi == lo) {
            out[t] = gs_zero<T>();
            continue;
        }
        // The row's partial results, or -- where a malformed indptr's overlapping rows
        // outgrew the bounds -- its terms, folded here: one loop over either.
        const bool from_partials = folded && s0 >= 0 && s0 + count <= n_slot_bound;
        const long long first = from_partials ? s0 : lo;
        const long long last = from_partials ? s0 + count : hi;
        T acc = R::identity();
        for (long long p = first; p < last; ++p) {
            const T term = from_partials
                ? partial[p * n + c]
                : gs_mul<T>(data[p], b[gs_clip_index(static_cast<long long>(indices[p]), k) * n + c]);
            acc = R::combine(acc, term);
        }
        out[t] = R::finish(acc, hi - lo);
    }
}

#ifdef GPUSPARSE_INSTANTIATE_ALL
#define GS_INST_SPMM(T, I)                                                                        \
    template __global__ void gs_csr_spmm<T, I>(const I*, const I*, const T*, long long, const T*, \
                                               long long, T*, long long, long long, T, T, int);
#define GS_INST_REDUCE(T, I, OP)                                                                         \
    template __global__ void gs_csr_spmm_reduce_chunks<T, I, OP>(                                        \
        const I*, const I*, const T*, long long, const T*, long long, const long long*, const long long*, \
        long long, long long, long long, T*, T*, long long, long long);                                  \
    template __global__ void gs_csr_spmm_reduce_rows<T, I, OP>(                                          \
        const I*, const I*, const T*, long long, const T*, long long, const long long*, const long long*, \
        long long, long long, const T*, T*, long long, long long);
#define GS_INST_REAL(T, I)         \
    GS_INST_SPMM(T, I)             \
    GS_INST_REDUCE(T, I, GS_MM_SUM) \
    GS_INST_REDUCE(T, I, GS_MM_MAX) \
    GS_INST_REDUCE(T, I, GS_MM_MIN)
#define GS_INST_INEXACT(T, I) GS_INST_REDUCE(T, I, GS_MM_MEAN)
#define GS_INST_INDEX(I)                                    \
    GS_INST_REAL(signed char, I)                            \
    GS_INST_REAL(unsigned char, I)                          \
    GS_INST_REAL(short, I)                                  \
    GS_INST_REAL(unsigned short, I)                         \
    GS_INST_REAL(int, I)                                    \
    GS_INST_REAL(unsigned int, I)                           \
    GS_INST_REAL(long long, I)                              \
    GS_INST_REAL(unsigned long long, I)                     \
    GS_INST_REAL(float, I)                                  \
    GS_INST_REAL(double, I)                                 \
    GS_INST_SPMM(gs_complex64, I)                           \
    GS_INST_SPMM(gs_complex128, I)                          \
    GS_INST_REDUCE(gs_complex64, I, GS_MM_SUM)              \
    GS_INST_REDUCE(gs_complex128, I, GS_MM_SUM)             \
    GS_INST_INEXACT(float, I)                               \
    GS_INST_INEXACT(double, I)                              \
    GS_INST_INEXACT(gs_complex64, I)                        \
    GS_INST_INEXACT(gs_complex128, I)
GS_INST_INDEX(int)
GS_INST_INDEX(long long)
template __global__ void gs_csr_chunk_counts<int>(const int*, long long, long long, long long, long long*,
                                                  long long*);
template __global__ void gs_csr_chunk_counts<long long>(const long long*, long long, long long, long long,
                                                        long long*, long long*);
#endif
