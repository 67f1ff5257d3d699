// gpusparse CUDA kernels: products over a semiring (add monoid, multiply
// operator), GraphBLAS's mxm / mxv, with an optional mask.
//
//   gs_semiring_spmm      CSR (m, k) times a dense (k, n): one thread per output.
//   gs_semiring_count     sparse x sparse, counting pass: the masked terms of each A entry.
//   gs_semiring_expand    sparse x sparse, the terms (key row * n + column, value mul(a, b)).
//   gs_semiring_reduce    the sorted terms' runs reduced with the monoid, in term order.
//
// The sparse x sparse product is expand-sort-reduce: the terms of every A
// entry are written at the offsets the counting pass gives (the mask is
// applied there, so a masked-out term is never formed), the launcher sorts
// them by key with the library's radix sort (stable: each run keeps the
// order of its terms, A's entries first, then B's), and each run is reduced
// sequentially, so the CPU's row-wise accumulator and this path combine the
// terms of an output in the same order.
//
// ADD and MUL are compile-time codes: the positions in
// gpusparse._kernels.SEMIRING_ADD / SEMIRING_MUL. Each term is rounded to T
// before it is combined (integers wrap, gs_add / gs_mul); a reduction starts
// from its first term; min / max combine as C's fmin / fmax (a NaN loses to
// any number), as SuiteSparse:GraphBLAS does; any keeps some term (the last).
//
// Whatever the values of the integer inputs (the memory-safety contract):
// row ranges are clipped (gs_row_range), column indices are clipped into the
// operand they address (gs_clip_index), writes outside an output are dropped,
// and each A entry writes only inside its own [offsets[p], offsets[p + 1])
// window cut to the term buffer.

#include "common.cuh"

#define GS_SR_THREADS 256

#define GS_SR_PLUS 0
#define GS_SR_MIN 1
#define GS_SR_MAX 2
#define GS_SR_LOR 3
#define GS_SR_ANY 4

#define GS_SR_TIMES 0
#define GS_SR_ADD 1
#define GS_SR_MINOP 2
#define GS_SR_MAXOP 3
#define GS_SR_LAND 4
#define GS_SR_PAIR 5
#define GS_SR_FIRST 6
#define GS_SR_SECOND 7

// The add monoid: identity and combine(acc, v) (acc holds the earlier terms).
template <typename T, int ADD> struct gs_sr_monoid;
template <typename T> struct gs_sr_monoid<T, GS_SR_PLUS> {
    static __device__ __forceinline__ T identity() { return gs_zero<T>(); }
    static __device__ __forceinline__ T combine(T acc, T v) { return gs_add<T>(acc, v); }
};
template <typename T> struct gs_sr_monoid<T, GS_SR_MIN> {
    static __device__ __forceinline__ T identity() { return gs_limits<T>::highest(); }
    static __device__ __forceinline__ T combine(T acc, T v) {
        return (!gs_isnan<T>(v) && (gs_isnan<T>(acc) || gs_less<T>(v, acc))) ? v : acc;
    }
};
template <typename T> struct gs_sr_monoid<T, GS_SR_MAX> {
    static __device__ __forceinline__ T identity() { return gs_limits<T>::lowest(); }
    static __device__ __forceinline__ T combine(T acc, T v) {
        return (!gs_isnan<T>(v) && (gs_isnan<T>(acc) || gs_less<T>(acc, v))) ? v : acc;
    }
};
template <typename T> struct gs_sr_monoid<T, GS_SR_LOR> {
    static __device__ __forceinline__ T identity() { return gs_zero<T>(); }
    static __device__ __forceinline__ T combine(T acc, T v) {
        return static_cast<T>(gs_nonzero<T>(acc) || gs_nonzero<T>(v));
    }
};
template <typename T> struct gs_sr_monoid<T, GS_SR_ANY> {
    static __device__ __forceinline__ T identity() { return gs_zero<T>(); }
    static __device__ __forceinline__ T combine(T, T v) { return v; }
};

// The multiply operator.
template <typename T, int MUL> struct gs_sr_op;
template <typename T> struct gs_sr_op<T, GS_SR_TIMES> {
    static __device__ __forceinline__ T apply(T a, T b) { return gs_mul<T>(a, b); }
};
template <typename T> struct gs_sr_op<T, GS_SR_ADD> {
    static __device__ __forceinline__ T apply(T a, T b) { return gs_add<T>(a, b); }
};
template <typename T> struct gs_sr_op<T, GS_SR_MINOP> {
    static __device__ __forceinline__ T apply(T a, T b) {
        return gs_isnan<T>(a) ? a : (gs_isnan<T>(b) ? b : (gs_less<T>(b, a) ? b : a));
    }
};
template <typename T> struct gs_sr_op<T, GS_SR_MAXOP> {
    static __device__ __forceinline__ T apply(T a, T b) {
        return gs_isnan<T>(a) ? a : (gs_isnan<T>(b) ? b : (gs_less<T>(a, b) ? b : a));
    }
};
template <typename T> struct gs_sr_op<T, GS_SR_LAND> {
    static __device__ __forceinline__ T apply(T a, T b) {
        return static_cast<T>(gs_nonzero<T>(a) && gs_nonzero<T>(b));
    }
};
template <typename T> struct gs_sr_op<T, GS_SR_PAIR> {
    static __device__ __forceinline__ T apply(T, T) { return gs_one<T>(); }
};
template <typename T> struct gs_sr_op<T, GS_SR_FIRST> {
    static __device__ __forceinline__ T apply(T a, T) { return a; }
};
template <typename T> struct gs_sr_op<T, GS_SR_SECOND> {
    static __device__ __forceinline__ T apply(T, T b) { return b; }
};

// gs_semiring_spmm: out[r, c] = ADD over p in row r of MUL(data[p], b[indices[p], c]);
// the identity where row r is empty or allowed[r, c] is false (use_mask != 0).
//
// Thread mapping: one thread per output element in row-major order
// (t = r * n + c, 64-bit, grid-stride), as gs_csr_spmm: the n threads of a
// row read the same entries, consecutive threads read consecutive elements
// of b's rows.
// Preconditions: any 1-D grid; k >= 1; b (k, n), out
// and allowed (m, n) C-contiguous; allowed is not read when use_mask == 0.
template <typename T, typename I, int ADD, int MUL>
__global__ void __launch_bounds__(GS_SR_THREADS) gs_semiring_spmm(
    const I* __restrict__ indptr, const I* __restrict__ indices, const T* __restrict__ data, long long nnz,
    const T* __restrict__ b, long long k, const bool* __restrict__ allowed, int use_mask,
    T* __restrict__ out, long long m, long long n) {
    typedef gs_sr_monoid<T, ADD> M;
    typedef gs_sr_op<T, MUL> O;
    const long long total = m * n;
    for (long long t = gs_global_thread(); t < total; t += gs_grid_stride()) {
        const long long r = t / n;
        const long long c = t - r * n;
        long long start, end;
        gs_row_range<I>(indptr, r, nnz, start, end);
        if (start == end || (use_mask && !allowed[t])) {
            out[t] = M::identity();
            continue;
        }
        T acc = O::apply(data[start], b[gs_clip_index(static_cast<long long>(indices[start]), k) * n + c]);
        for (long long p = start + 1; p < end; ++p) {
            const long long row_b = gs_clip_index(static_cast<long long>(indices[p]), k);
            acc = M::combine(acc, O::apply(data[p], b[row_b * n + c]));
        }
        out[t] = acc;
    }
}

// Whether output (r, j) is computed: j in row r of the mask's structure
// (sorted indices), negated by complement; always when use_mask == 0.
template <typename I>
__device__ __forceinline__ bool gs_sr_selected(const I* mask_indptr, const I* mask_indices, long long mask_nnz,
                                               int use_mask, int complement, long long r, long long j) {
    if (!use_mask) return true;
    long long lo, hi;
    gs_row_range<I>(mask_indptr, r, mask_nnz, lo, hi);
    const long long at = gs_lower_bound<I>(mask_indices, lo, hi, j);
    const bool found = at < hi && static_cast<long long>(mask_indices[at]) == j;
    return found != (complement != 0);
}

// gs_semiring_count: counts[p] = the number of B entries in row indices_a[p]
// whose output (rows[p], column) the mask selects.
//
// Thread mapping: one thread per A entry p (grid-stride, 64-bit), looping
// over one row of B.
// Preconditions: rows (nnz_a) in [0, m) (from expand); k >= 1 (B has rows);
// mask_indptr (m + 1) and mask_indices are read only when use_mask != 0.
template <typename I>
__global__ void __launch_bounds__(GS_SR_THREADS) gs_semiring_count(
    const long long* __restrict__ rows, const I* __restrict__ a_indices, long long nnz_a,
    const I* __restrict__ b_indptr, const I* __restrict__ b_indices, long long nnz_b, long long k, long long n,
    const I* __restrict__ mask_indptr, const I* __restrict__ mask_indices, long long mask_nnz, int use_mask,
    int complement, long long* __restrict__ counts) {
    for (long long p = gs_global_thread(); p < nnz_a; p += gs_grid_stride()) {
        const long long col = gs_clip_index(static_cast<long long>(a_indices[p]), k);
        long long lo, hi;
        gs_row_range<I>(b_indptr, col, nnz_b, lo, hi);
        if (!use_mask) {
            counts[p] = hi - lo;
            continue;
        }
        long long count = 0;
        for (long long q = lo; q < hi; ++q) {
            const long long j = gs_clip_index(static_cast<long long>(b_indices[q]), n);
            count += gs_sr_selected<I>(mask_indptr, mask_indices, mask_nnz, use_mask, complement, rows[p], j);
        }
        counts[p] = count;
    }
}

// gs_semiring_expand: the selected terms of A entry p at keys/values
// [offsets[p], offsets[p + 1]): key rows[p] * n + column, value
// MUL(a_data[p], b_data[q]).
//
// Thread mapping: one thread per A entry p, as gs_semiring_count.
// Preconditions: as gs_semiring_count; offsets (nnz_a + 1) the running
// counts of that pass, n_terms the buffers' length. Writes only inside
// [offsets[p], offsets[p + 1]) cut to [0, n_terms).
template <typename T, typename I, int MUL>
__global__ void __launch_bounds__(GS_SR_THREADS) gs_semiring_expand(
    const long long* __restrict__ rows, const I* __restrict__ a_indices, const T* __restrict__ a_data,
    long long nnz_a, const I* __restrict__ b_indptr, const I* __restrict__ b_indices,
    const T* __restrict__ b_data, long long nnz_b, long long k, long long n, const I* __restrict__ mask_indptr,
    const I* __restrict__ mask_indices, long long mask_nnz, int use_mask, int complement,
    const long long* __restrict__ offsets, long long n_terms, long long* __restrict__ keys,
    T* __restrict__ values) {
    typedef gs_sr_op<T, MUL> O;
    for (long long p = gs_global_thread(); p < nnz_a; p += gs_grid_stride()) {
        const long long col = gs_clip_index(static_cast<long long>(a_indices[p]), k);
        long long lo, hi;
        gs_row_range<I>(b_indptr, col, nnz_b, lo, hi);
        long long out = gs_clamp(offsets[p], 0, n_terms);
        const long long stop = gs_clamp(offsets[p + 1], out, n_terms);
        const long long r = rows[p];
        const T a = a_data[p];
        for (long long q = lo; q < hi && out < stop; ++q) {
            const long long j = gs_clip_index(static_cast<long long>(b_indices[q]), n);
            if (!gs_sr_selected<I>(mask_indptr, mask_indices, mask_nnz, use_mask, complement, r, j)) continue;
            keys[out] = r * n + j;
            values[out] = O::apply(a, b_data[q]);
            ++out;
        }
    }
}

// gs_semiring_reduce: out[s] = ADD over values[perm[i]], i in [starts[s], starts[s + 1]),
// in that order, starting from the first term.
//
// Thread mapping: one thread per output (run; grid-stride, 64-bit), looping
// over its terms.
// Preconditions: starts (n_out + 1) non-decreasing, clipped into [0, n_terms];
// perm (n_terms) entries clipped into [0, n_terms); n_terms >= 1.
template <typename T, int ADD>
__global__ void __launch_bounds__(GS_SR_THREADS) gs_semiring_reduce(
    const T* __restrict__ values, const long long* __restrict__ perm, long long n_terms,
    const long long* __restrict__ starts, long long n_out, T* __restrict__ out) {
    typedef gs_sr_monoid<T, ADD> M;
    for (long long s = gs_global_thread(); s < n_out; s += gs_grid_stride()) {
        const long long lo = gs_clamp(starts[s], 0, n_terms);
        const long long hi = gs_clamp(starts[s + 1], lo, n_terms);
        if (lo == hi) {
            out[s] = M::identity();
            continue;
        }
        T acc = values[gs_clip_index(perm[lo], n_terms)];
        for (long long i = lo + 1; i < hi; ++i) acc = M::combine(acc, values[gs_clip_index(perm[i], n_terms)]);
        out[s] = acc;
    }
}

#ifdef GPUSPARSE_INSTANTIATE_ALL
#define GS_INST_SR_SPMM(T, ADD, MUL)                                                                    \
    template __global__ void gs_semiring_spmm<T, long long, ADD, MUL>(                                  \
        const long long*, const long long*, const T*, long long, const T*, long long, const bool*, int, \
        T*, long long, long long);
#define GS_INST_SR_EXPAND(T, MUL)                                                                        \
    template __global__ void gs_semiring_expand<T, long long, MUL>(                                      \
        const long long*, const long long*, const T*, long long, const long long*, const long long*,     \
        const T*, long long, long long, long long, const long long*, const long long*, long long, int,   \
        int, const long long*, long long, long long*, T*);
#define GS_INST_SR_REDUCE(T, ADD) \
    template __global__ void gs_semiring_reduce<T, ADD>(const T*, const long long*, long long,         \
                                                         const long long*, long long, T*);
#define GS_INST_SR_ADD(T, ADD)              \
    GS_INST_SR_SPMM(T, ADD, GS_SR_TIMES)    \
    GS_INST_SR_SPMM(T, ADD, GS_SR_ADD)      \
    GS_INST_SR_SPMM(T, ADD, GS_SR_MINOP)    \
    GS_INST_SR_SPMM(T, ADD, GS_SR_MAXOP)    \
    GS_INST_SR_SPMM(T, ADD, GS_SR_PAIR)     \
    GS_INST_SR_SPMM(T, ADD, GS_SR_FIRST)    \
    GS_INST_SR_SPMM(T, ADD, GS_SR_SECOND)   \
    GS_INST_SR_REDUCE(T, ADD)
#define GS_INST_SR_NUMERIC(T)               \
    GS_INST_SR_ADD(T, GS_SR_PLUS)           \
    GS_INST_SR_ADD(T, GS_SR_MIN)            \
    GS_INST_SR_ADD(T, GS_SR_MAX)            \
    GS_INST_SR_SPMM(T, GS_SR_ANY, GS_SR_PAIR) \
    GS_INST_SR_REDUCE(T, GS_SR_ANY)         \
    GS_INST_SR_EXPAND(T, GS_SR_TIMES)       \
    GS_INST_SR_EXPAND(T, GS_SR_ADD)         \
    GS_INST_SR_EXPAND(T, GS_SR_MINOP)       \
    GS_INST_SR_EXPAND(T, GS_SR_MAXOP)       \
    GS_INST_SR_EXPAND(T, GS_SR_PAIR)        \
    GS_INST_SR_EXPAND(T, GS_SR_FIRST)       \
    GS_INST_SR_EXPAND(T, GS_SR_SECOND)
GS_INST_SR_NUMERIC(signed char)
GS_INST_SR_NUMERIC(unsigned char)
GS_INST_SR_NUMERIC(short)
GS_INST_SR_NUMERIC(unsigned short)
GS_INST_SR_NUMERIC(int)
GS_INST_SR_NUMERIC(unsigned int)
GS_INST_SR_NUMERIC(long long)
GS_INST_SR_NUMERIC(unsigned long long)
GS_INST_SR_NUMERIC(float)
GS_INST_SR_NUMERIC(double)
GS_INST_SR_SPMM(bool, GS_SR_LOR, GS_SR_LAND)
GS_INST_SR_SPMM(bool, GS_SR_LOR, GS_SR_PAIR)
GS_INST_SR_SPMM(bool, GS_SR_LOR, GS_SR_FIRST)
GS_INST_SR_SPMM(bool, GS_SR_LOR, GS_SR_SECOND)
GS_INST_SR_SPMM(bool, GS_SR_ANY, GS_SR_PAIR)
GS_INST_SR_REDUCE(bool, GS_SR_LOR)
GS_INST_SR_REDUCE(bool, GS_SR_ANY)
GS_INST_SR_EXPAND(bool, GS_SR_LAND)
GS_INST_SR_EXPAND(bool, GS_SR_PAIR)
GS_INST_SR_EXPAND(bool, GS_SR_FIRST)
GS_INST_SR_EXPAND(bool, GS_SR_SECOND)
template __global__ void gs_semiring_count<long long>(const long long*, const long long*, long long,
                                                      const long long*, const long long*, long long, long long,
                                                      long long, const long long*, const long long*, long long,
                                                      int, int, long long*);
#endif
