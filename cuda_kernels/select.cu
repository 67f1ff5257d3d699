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
// Preconditions: values (m, width) and out (n_out, width) C-contiguous; every
// source run inside values, every destination run inside out, destination
// runs disjoint; lengths >= 0; width >= 1. Not validated.
// Other values (the memory-safety contract): each run is cut once to the
// part of it whose destination rows lie in [0, n_out) (the others are
// dropped), and a source row outside [0, m) reads the nearest row (clipped;
// 0 when m == 0). A run whose source lies inside values takes the
// contiguous copy above; only the others pay for a division per word.
// Overlapping destination runs are written in an unspecified order.
template <typename T>
__global__ void __launch_bounds__(256) gs_copy_segments(
    const T* __restrict__ values, long long m, const long long* __restrict__ src_starts,
    const long long* __restrict__ dst_starts, const long long* __restrict__ lengths,
    long long n_segments, long long width, long long n_out, T* __restrict__ out) {
    const long long warp = gs_global_thread() >> 5;
    const long long n_warps = gs_grid_stride() >> 5;
    const int lane = threadIdx.x & (GS_WARP - 1);
    // The source row of item j_lo saturates at +-2**62: adding j - j_lo
    // (< n_out, far below 2**62) cannot overflow then, and every row clips
    // to the same one as for the exact sum.
    const long long far = 1LL << 62;
    for (long long s = warp; s < n_segments; s += n_warps) {
        const long long dst_row = dst_starts[s];
        long long j_lo, j_hi;
        gs_run_window(dst_row, lengths[s], n_out, j_lo, j_hi);
        if (j_lo >= j_hi) continue;  // uniform over the warp
        const long long src0 = src_starts[s];
        const long long src_row = (src0 >= 0 && j_lo > far - src0) ? far : gs_clamp(src0 + j_lo, -far, far);
        const long long dst = (dst_row + j_lo) * width;
        const long long count = (j_hi - j_lo) * width;
        if (src_row >= 0 && src_row + (j_hi - j_lo) <= m) {
            const long long src = src_row * width;
            for (long long e = lane; e < count; e += GS_WARP) out[dst + e] = values[src + e];
        } else {
            for (long long e = lane; e < count; e += GS_WARP) {
                const long long j = e / width;
                const long long c = e - j * width;
                out[dst + e] = m > 0 ? values[gs_clip_index(src_row + j, m) * width + c] : static_cast<T>(0);
            }
        }
    }
}

#ifdef GPUSPARSE_INSTANTIATE_ALL
#define GS_INST_SELECT(T)                                                                        \
    template __global__ void gs_copy_segments<T>(const T*, long long, const long long*,          \
                                                 const long long*, const long long*, long long,  \
                                                 long long, long long, T*);
GS_INST_SELECT(unsigned char)
GS_INST_SELECT(unsigned short)
GS_INST_SELECT(unsigned int)
GS_INST_SELECT(unsigned long long)
#endif

// gs_segment_search: out[s] = the first p in [starts[s], ends[s]] with
// keys[p] >= values[s] (right == 0) or keys[p] > values[s] (right == 1).
//
// Thread mapping: one thread per segment (grid-stride, 64-bit), a binary
// search in its run.
// Preconditions: keys (n_keys,) sorted ascending within every
// [starts[s], ends[s]); 0 <= starts[s] <= ends[s] <= n_keys; n_segments >= 1.
// Other bounds are clipped into [0, n_keys], an end before its start
// giving an empty run (the answer is then the clipped start); unsorted keys
// give some position in the run.
template <typename I>
__global__ void __launch_bounds__(256) gs_segment_search(
    const I* __restrict__ keys, long long n_keys, const long long* __restrict__ starts,
    const long long* __restrict__ ends, const long long* __restrict__ values, long long n_segments,
    int right, long long* __restrict__ out) {
    for (long long s = gs_global_thread(); s < n_segments; s += gs_grid_stride()) {
        long long lo = gs_clamp(starts[s], 0, n_keys);
        long long hi = gs_clamp(ends[s], lo, n_keys);
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
}

#ifdef GPUSPARSE_INSTANTIATE_ALL
template __global__ void gs_segment_search<int>(const int*, long long, const long long*, const long long*,
                                                const long long*, long long, int, long long*);
template __global__ void gs_segment_search<long long>(const long long*, long long, const long long*,
                                                      const long long*, const long long*, long long,
                                                      int, long long*);
#endif
