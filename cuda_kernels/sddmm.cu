// gpusparse CUDA kernels: SDDMM, a dense product sampled at the stored
// positions of a sparse matrix: out[p] = alpha * dot(a[rows[p], :], bt[cols[p], :]).
//
// a is (m, k) and bt is (n, k), both C-contiguous, so each dot product reads
// two contiguous rows. cuSPARSE's cusparseSDDMM is not bound by CuPy's
// cusparse module; this kernel takes every value dtype but bool, with
// integer arithmetic that wraps like NumPy's.

#include "common.cuh"

#define GS_SDDMM_THREADS 256

// gs_sddmm: out[p] = alpha * sum_j a[rows[p] * k + j] * bt[cols[p] * k + j].
//
// Thread mapping: one warp per stored entry p (warp index = global thread
// index / 32 from entry p_base, 64-bit: the launcher covers more entries
// than one grid holds with several launches); lane l reads j = l, l + 32, ... of both rows
// (coalesced), then a warp tree reduction with a fixed association
// (deterministic) and lane 0 writes out[p].
// Preconditions: launches from p_base together cover [0, nnz), blockDim.x a multiple
// of 32; rows (nnz) in [0, m) and cols (nnz) in [0, n); m, n >= 1. Other
// rows and columns read the nearest row of a or bt (clipped).
template <typename T, typename I>
__global__ void __launch_bounds__(GS_SDDMM_THREADS) gs_sddmm(
    const long long* __restrict__ rows, const I* __restrict__ cols, const T* __restrict__ a, long long m,
    const T* __restrict__ bt, long long n, long long nnz, long long k, T alpha, long long p_base,
    T* __restrict__ out) {
    const long long p = p_base + gs_global_thread() / GS_WARP;
    const unsigned int lane = gs_lane_id();
    if (p >= nnz) return;  // uniform across the warp
    const T* __restrict__ left = a + gs_clip_index(rows[p], m) * k;
    const T* __restrict__ right = bt + gs_clip_index(static_cast<long long>(cols[p]), n) * k;
    T acc = gs_zero<T>();
    for (long long j = lane; j < k; j += GS_WARP) {
        acc = gs_add<T>(acc, gs_mul<T>(left[j], right[j]));
    }
    acc = gs_warp_reduce<T>(acc, gs_sum<T>());
    if (lane == 0) out[p] = gs_mul<T>(alpha, acc);
}

#ifdef GPUSPARSE_INSTANTIATE_ALL
#define GS_INST_SDDMM(T, I)                                                                    \
    template __global__ void gs_sddmm<T, I>(const long long*, const I*, const T*, long long,  \
                                            const T*, long long, long long, long long, T,         \
                                            long long, T*);
#define GS_INST_SDDMM_INDEX(I)              \
    GS_INST_SDDMM(signed char, I)           \
    GS_INST_SDDMM(unsigned char, I)         \
    GS_INST_SDDMM(short, I)                 \
    GS_INST_SDDMM(unsigned short, I)        \
    GS_INST_SDDMM(int, I)                   \
    GS_INST_SDDMM(unsigned int, I)          \
    GS_INST_SDDMM(long long, I)             \
    GS_INST_SDDMM(unsigned long long, I)    \
    GS_INST_SDDMM(float, I)                 \
    GS_INST_SDDMM(double, I)                \
    GS_INST_SDDMM(gs_complex64, I)          \
    GS_INST_SDDMM(gs_complex128, I)
GS_INST_SDDMM_INDEX(int)
GS_INST_SDDMM_INDEX(long long)
#endif
