// gpusparse CUDA kernels: row scatter into a dense buffer, row gather and
// column gather.
//
// They only move bytes, so they are instantiated for unsigned "word" types of
// 1, 2, 4 and 8 bytes; the launcher views every value dtype as one of them
// (complex as its component's word with twice the width), which keeps the
// number of compiled kernels at four per kernel.

#include "common.cuh"

// gs_scatter_rows: out[keys[i] * width + c] = values[i * width + c].
//
// Thread mapping: 2**lpr_log2 consecutive lanes per row i (1-D grid,
// grid-stride, 64-bit index; lpr = min(32, next power of two >= width)); lane l copies
// columns l, l + lpr, ... so a warp reads and writes whole rows, coalesced.
// Preconditions: keys (n,) unique, in [0, n_out); values (n, width) and out
// (n_out, width) C-contiguous; n >= 1, width >= 1. A key outside
// [0, n_out) is dropped (its row is not written); duplicate keys write
// their rows in an unspecified order.
template <typename T>
__global__ void __launch_bounds__(256) gs_scatter_rows(
    const long long* __restrict__ keys, const T* __restrict__ values, long long n, long long width,
    int lpr_log2, long long n_out, T* __restrict__ out) {
    const long long lpr = 1LL << lpr_log2;
    // The stride is a multiple of 256 >= lpr: each thread keeps its lane of a row.
    for (long long t = gs_global_thread(); (t >> lpr_log2) < n; t += gs_grid_stride()) {
        const long long i = t >> lpr_log2;
        const long long key = keys[i];
        if (!gs_in_range(key, n_out)) continue;
        const long long dst = key * width;
        const long long src = i * width;
        for (long long c = t & (lpr - 1); c < width; c += lpr) out[dst + c] = values[src + c];
    }
}

// gs_gather_rows: out[i * width + c] = values[clip(index[i]) * width + c].
//
// Thread mapping: as gs_scatter_rows.
// Preconditions: index (n,) in [0, m); values (m, width) and out (n, width)
// C-contiguous; n >= 1, width >= 1, m >= 1. An index outside [0, m) reads
// the nearest row (clipped).
template <typename T>
__global__ void __launch_bounds__(256) gs_gather_rows(
    const T* __restrict__ values, long long m, const long long* __restrict__ index, long long n,
    long long width, int lpr_log2, T* __restrict__ out) {
    const long long lpr = 1LL << lpr_log2;
    for (long long t = gs_global_thread(); (t >> lpr_log2) < n; t += gs_grid_stride()) {
        const long long i = t >> lpr_log2;
        const long long src = gs_clip_index(index[i], m) * width;
        const long long dst = i * width;
        for (long long c = t & (lpr - 1); c < width; c += lpr) out[dst + c] = values[src + c];
    }
}

// gs_take_columns: out[(r * n + i) * words + w] = values[(r * m + clip(index[i])) * words + w]
// for r < g: the chosen columns of every row of a (g, m) array of elements of
// ``words`` words each (complex values are two words).
//
// Thread mapping: one thread per index i (grid-stride, 64-bit index); it reads
// index[i] once and copies column i of each of the g rows, so consecutive
// threads write consecutive elements of every output row.
// Preconditions: values (g, m) and out (g, n) C-contiguous; n >= 1, m >= 1,
// words >= 1. An index outside [0, m) reads the nearest column (clipped).
template <typename T>
__global__ void __launch_bounds__(256) gs_take_columns(
    const T* __restrict__ values, long long g, long long m, const long long* __restrict__ index, long long n,
    long long words, T* __restrict__ out) {
    for (long long i = gs_global_thread(); i < n; i += gs_grid_stride()) {
        const long long col = gs_clip_index(index[i], m);
        for (long long r = 0; r < g; ++r) {
            const T* __restrict__ src = values + (r * m + col) * words;
            T* __restrict__ dst = out + (r * n + i) * words;
            for (long long w = 0; w < words; ++w) dst[w] = src[w];
        }
    }
}

#ifdef GPUSPARSE_INSTANTIATE_ALL
#define GS_INST_MOVE(T)                                                                         \
    template __global__ void gs_scatter_rows<T>(const long long*, const T*, long long, long long, \
                                                int, long long, T*);                             \
    template __global__ void gs_gather_rows<T>(const T*, long long, const long long*, long long,  \
                                               long long, int, T*);                              \
    template __global__ void gs_take_columns<T>(const T*, long long, long long, const long long*, \
                                                long long, long long, T*);
GS_INST_MOVE(unsigned char)
GS_INST_MOVE(unsigned short)
GS_INST_MOVE(unsigned int)
GS_INST_MOVE(unsigned long long)
#endif
