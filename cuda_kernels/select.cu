// gpusparse CUDA kernels: copies of runs of rows (the gathers behind CSR row
// selection, the gather of whole rows of a sorted COO array, and the
// interleaving of CSR/CSC arrays joined along their minor axis).
//
// Only bytes move, so the kernel is instantiated for unsigned "words" of 1,
// 2, 4 and 8 bytes; the launcher views every value dtype as one of them
// (complex as its component's word with twice the width), as scatter.cu does.

#include "common.cuh"

// gs_copy_segments: for every segment s and 0 <= j < lengths[s],
//     out[(dst_starts[s] + j) * width + c] = values[(src_starts[s] + j) * width + c].
//
// Thread mapping: one warp per segment (grid-stride over segments when the
// grid is smaller than the number of segments); the 32 lanes copy the
// segment's lengths[s] * width contiguous words in lane-strided order, so
// both the read and the write of a warp are coalesced. A segment of any
// length is handled by one warp: runs are short in the uses above (rows of a
// sparse matrix); long runs still stream at full coalescing.
// Preconditions: values (m, width) and out (n, width) C-contiguous; every
// source run inside values, every destination run inside out, destination
// runs disjoint; lengths >= 0; width >= 1. Not validated.
template <typename T>
__global__ void __launch_bounds__(256) gs_copy_segments(
    const T* __restrict__ values, const long long* __restrict__ src_starts,
    const long long* __restrict__ dst_starts, const long long* __restrict__ lengths,
    long long n_segments, long long width, T* __restrict__ out) {
    const long long warp = gs_global_thread() >> 5;
    const long long n_warps = ((long long)gridDim.x * blockDim.x) >> 5;
    const int lane = threadIdx.x & (GS_WARP - 1);
    for (long long s = warp; s < n_segments; s += n_warps) {
        const long long src = src_starts[s] * width;
        const long long dst = dst_starts[s] * width;
        const long long count = lengths[s] * width;
        for (long long e = lane; e < count; e += GS_WARP) out[dst + e] = values[src + e];
    }
}

#ifdef GPUSPARSE_INSTANTIATE_ALL
#define GS_INST_SELECT(T)                                                                        \
    template __global__ void gs_copy_segments<T>(const T*, const long long*, const long long*, \
                                                 const long long*, long long, long long, T*);
GS_INST_SELECT(unsigned char)
GS_INST_SELECT(unsigned short)
GS_INST_SELECT(unsigned int)
GS_INST_SELECT(unsigned long long)
#endif

// gs_segment_search: out[s] = the first p in [starts[s], ends[s]] with
// keys[p] >= values[s] (right == 0) or keys[p] > values[s] (right == 1).
//
// Thread mapping: one thread per segment, a binary search in its run.
// Preconditions: keys sorted ascending within every [starts[s], ends[s]);
// 0 <= starts[s] <= ends[s] <= length of keys; n_segments >= 1.
template <typename I>
__global__ void __launch_bounds__(256) gs_segment_search(
    const I* __restrict__ keys, const long long* __restrict__ starts,
    const long long* __restrict__ ends, const long long* __restrict__ values, long long n_segments,
    int right, long long* __restrict__ out) {
    const long long s = gs_global_thread();
    if (s >= n_segments) return;
    long long lo = starts[s];
    long long hi = ends[s];
    const long long v = values[s];
    while (lo < hi) {
        const long long mid = lo + ((hi - lo) >> 1);
        const long long k = static_cast<long long>(keys[mid]);
        if (k < v || (right && k == v)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    out[s] = lo;
}

#ifdef GPUSPARSE_INSTANTIATE_ALL
template __global__ void gs_segment_search<int>(const int*, const long long*, const long long*,
                                                const long long*, long long, int, long long*);
template __global__ void gs_segment_search<long long>(const long long*, const long long*,
                                                      const long long*, const long long*, long long,
                                                      int, long long*);
#endif
