// gpusparse CUDA kernels: linearize / delinearize.
//
// Both kernels take the per-dimension constants (strides, or extents) as up
// to GS_LIN_DIMS scalar kernel arguments rather than through a device array:
// no host-to-device copy per call, and the unrolled loops keep them in
// registers. Shapes with more dimensions are handled by the launcher in
// chunks of GS_LIN_DIMS dimensions.

#include "common.cuh"

#define GS_LIN_DIMS 8

// gs_linearize: keys[i] (+)= sum_{k < d} clip(coords[k * n + i], 0, l_k) * stride_k.
//
// Thread mapping: one thread per element i, grid-stride (64-bit index); for
// each dimension the warp reads 32 consecutive coordinates (coalesced).
// Preconditions: coords is a C-contiguous (d, n) block, 1 <= d <= GS_LIN_DIMS;
// l_k = shape[k] - 1 (>= 0) and stride_k the C-order stride of dimension k;
// accumulate != 0 adds to the existing keys (later chunks of a shape with
// more than GS_LIN_DIMS dimensions). Coordinates out of [0, shape[k]) are
// clipped into it (the memory-safety contract), so every key lies in
// [0, prod(shape)); arithmetic is modulo 2**64 either way (no undefined
// behaviour).
template <typename I>
__global__ void __launch_bounds__(256) gs_linearize(
    const I* __restrict__ coords, long long n, int d,
    long long s0, long long s1, long long s2, long long s3,
    long long s4, long long s5, long long s6, long long s7,
    long long l0, long long l1, long long l2, long long l3,
    long long l4, long long l5, long long l6, long long l7,
    int accumulate, long long* __restrict__ keys) {
    const long long strides[GS_LIN_DIMS] = {s0, s1, s2, s3, s4, s5, s6, s7};
    const long long last[GS_LIN_DIMS] = {l0, l1, l2, l3, l4, l5, l6, l7};
    for (long long i = gs_global_thread(); i < n; i += gs_grid_stride()) {
        unsigned long long key = accumulate ? static_cast<unsigned long long>(keys[i]) : 0ull;
#pragma unroll
        for (int k = 0; k < GS_LIN_DIMS; ++k) {
            if (k < d) {
                const long long c = gs_clamp(static_cast<long long>(coords[k * n + i]), 0, last[k]);
                key += static_cast<unsigned long long>(c) * static_cast<unsigned long long>(strides[k]);
            }
        }
        keys[i] = static_cast<long long>(key);
    }
}

// One step of a mixed-radix decomposition: q = r / e, returns r - q * e.
// 32-bit division where both operands fit (far cheaper than 64-bit).
__device__ __forceinline__ unsigned long long gs_divmod(unsigned long long& r, unsigned long long e) {
    unsigned long long q;
    if ((r >> 32) == 0 && (e >> 32) == 0) {
        q = static_cast<unsigned int>(r) / static_cast<unsigned int>(e);
    } else {
        q = r / e;
    }
    const unsigned long long rem = r - q * e;
    r = q;
    return rem;
}

// gs_delinearize: the coordinates of dimensions [k0, k0 + c) of each key.
//
// Thread mapping: one thread per key i, grid-stride (64-bit index); it
// writes coords[j * n + i] for j < c (coalesced per row).
// Preconditions: keys in [0, prod(shape)), key_max = prod(shape) - 1 >= 0
// (saturated at 2**63 - 1): other keys are clipped into [0, key_max], so the
// coordinates always lie in the shape; 1 <= c <= GS_LIN_DIMS; e0..e{c-1}
// are the extents shape[k0 : k0 + c], all >= 1; ``inner`` is
// prod(shape[k0 + c:]) (>= 1, saturated at 2**64 - 1 by the launcher);
// outer != 0 when k0 == 0 (the first extent then needs no modulo);
// ``coords`` points at row k0 of the C-contiguous (d, n) output.
template <typename I>
__global__ void __launch_bounds__(256) gs_delinearize(
    const long long* __restrict__ keys, long long n, long long key_max, unsigned long long inner, int c,
    unsigned long long e0, unsigned long long e1, unsigned long long e2, unsigned long long e3,
    unsigned long long e4, unsigned long long e5, unsigned long long e6, unsigned long long e7,
    int outer, I* __restrict__ coords) {
    const unsigned long long ext[GS_LIN_DIMS] = {e0, e1, e2, e3, e4, e5, e6, e7};
    for (long long i = gs_global_thread(); i < n; i += gs_grid_stride()) {
        unsigned long long r = static_cast<unsigned long long>(gs_clamp(keys[i], 0, key_max));
        if (inner > 1) r /= inner;
#pragma unroll
        for (int j = GS_LIN_DIMS - 1; j >= 1; --j) {
            if (j < c) coords[j * n + i] = static_cast<I>(gs_divmod(r, ext[j]));
        }
        if (!outer) r = gs_divmod(r, ext[0]);
        coords[i] = static_cast<I>(r);
    }
}

#ifdef GPUSPARSE_INSTANTIATE_ALL
#define GS_INST_LIN(I)                                                                           \
    template __global__ void gs_linearize<I>(                                                   \
        const I*, long long, int, long long, long long, long long, long long, long long,        \
        long long, long long, long long, long long, long long, long long, long long, long long, \
        long long, long long, long long, int, long long*);                                      \
    template __global__ void gs_delinearize<I>(                                                 \
        const long long*, long long, long long, unsigned long long, int, unsigned long long,     \
        unsigned long long, unsigned long long, unsigned long long, unsigned long long,         \
        unsigned long long, unsigned long long, unsigned long long, int, I*);
GS_INST_LIN(long long)
GS_INST_LIN(int)
#endif
