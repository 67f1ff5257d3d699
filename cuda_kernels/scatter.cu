// gpusparse CUDA kernels: row scatter into a dense buffer and row gather.
//
// Both only move bytes, so they are instantiated for unsigned "word" types of
// 1, 2, 4 and 8 bytes; the launcher views every value dtype as one of them
// (complex as its component's word with twice the width), which keeps the
// number of compiled kernels at four per family.

#include "common.cuh"

// gs_scatter_rows: out[keys[i] * width + c] = values[i * width + c].
//
// Thread mapping: 2**lpr_log2 consecutive lanes per row i (1-D grid,
// 64-bit index; lpr = min(32, next power of two >= width)); lane l copies
// columns l, l + lpr, ... so a warp reads and writes whole rows, coalesced.
// Preconditions: keys (n,) unique, in [0, rows of out); values (n, width)
// and out (size, width) C-contiguous; n >= 1, width >= 1.
template <typename T>
__global__ void __launch_bounds__(256) gs_scatter_rows(
    const long long* __restrict__ keys, const T* __restrict__ values, long long n, long long width,
    int lpr_log2, T* __restrict__ out) {
    const long long t = gs_global_thread();
    const long long i = t >> lpr_log2;
    if (i >= n) return;
    const long long lpr = 1LL << lpr_log2;
    const long long dst = keys[i] * width;
    const long long src = i * width;
    for (long long c = t & (lpr - 1); c < width; c += lpr) out[dst + c] = values[src + c];
}

// gs_gather_rows: out[i * width + c] = values[index[i] * width + c].
//
// Thread mapping: as gs_scatter_rows.
// Preconditions: index (n,) in [0, m); values (m, width) and out (n, width)
// C-contiguous; n >= 1, width >= 1.
template <typename T>
__global__ void __launch_bounds__(256) gs_gather_rows(
    const T* __restrict__ values, const long long* __restrict__ index, long long n, long long width,
    int lpr_log2, T* __restrict__ out) {
    const long long t = gs_global_thread();
    const long long i = t >> lpr_log2;
    if (i >= n) return;
    const long long lpr = 1LL << lpr_log2;
    const long long src = index[i] * width;
    const long long dst = i * width;
    for (long long c = t & (lpr - 1); c < width; c += lpr) out[dst + c] = values[src + c];
}

#ifdef GPUSPARSE_INSTANTIATE_ALL
#define GS_INST_MOVE(T)                                                                         \
    template __global__ void gs_scatter_rows<T>(const long long*, const T*, long long, long long, \
                                                int, T*);                                        \
    template __global__ void gs_gather_rows<T>(const T*, const long long*, long long, long long,  \
                                               int, T*);
GS_INST_MOVE(unsigned char)
GS_INST_MOVE(unsigned short)
GS_INST_MOVE(unsigned int)
GS_INST_MOVE(unsigned long long)
#endif
