// gpusparse CUDA kernels: shared device helpers.
//
// Self-contained on purpose: no standard, CUDA-toolkit or CuPy header is
// included, so every kernel family compiles the same way with plain nvcc
// (tools/check_cuda_kernels.sh) and with NVRTC through cupy.RawModule
// (gpusparse/_kernels/cuda/_loader.py).
//
// Contents
//   * gs_complex64 / gs_complex128: layout-compatible with numpy complex64 /
//     complex128 (and with CuPy's thrust::complex), with +, *, ==, !=.
//   * gs_limits<T>: lowest/highest values, the identities of min and max.
//   * gs_sum / gs_prod / gs_min / gs_max: reduction functors with identity();
//     integer arithmetic wraps like NumPy's, min/max propagate NaN like
//     np.minimum / np.maximum (the first NaN wins) and order complex numbers
//     lexicographically (NumPy's order), bool sums are logical or.
//     gs_reducer<T, OP> picks one from an integer op code (GS_OP_*), which
//     is how kernels are templated so that a name expression reads
//     gs_kernel<float, 0>.
//   * gs_arg_state<T>: (value, row) pair of argmin / argmax reductions.
//   * warp shuffles for every value type, lane masks, and block-wide scans
//     and reductions for blocks whose size is a multiple of 32.
//   * memory safety whatever the values of integer inputs: gs_clamp,
//     gs_clip_index (clipped reads), gs_in_range (dropped writes),
//     gs_row_range (clipped indptr ranges), gs_run_window (runs cut to a
//     buffer); binary searches bounded by their range.

#ifndef GPUSPARSE_COMMON_CUH
#define GPUSPARSE_COMMON_CUH

#define GS_FULL_MASK 0xffffffffu
#define GS_WARP 32

// Reduction op codes; the order matches gpusparse._kernels.SEGMENT_OPS.
#define GS_OP_SUM 0
#define GS_OP_PROD 1
#define GS_OP_MIN 2
#define GS_OP_MAX 3
#define GS_OP_ANY 4
#define GS_OP_ALL 5
#define GS_OP_ARGMIN 6
#define GS_OP_ARGMAX 7

// --------------------------------------------------------------------------
// Complex types
// --------------------------------------------------------------------------

struct __align__(8) gs_complex64 {
    float re, im;
};

struct __align__(16) gs_complex128 {
    double re, im;
};

__device__ __forceinline__ gs_complex64 operator+(gs_complex64 a, gs_complex64 b) {
    gs_complex64 r; r.re = a.re + b.re; r.im = a.im + b.im; return r;
}
__device__ __forceinline__ gs_complex128 operator+(gs_complex128 a, gs_complex128 b) {
    gs_complex128 r; r.re = a.re + b.re; r.im = a.im + b.im; return r;
}
__device__ __forceinline__ gs_complex64 operator*(gs_complex64 a, gs_complex64 b) {
    gs_complex64 r;
    r.re = a.re * b.re - a.im * b.im;
    r.im = a.re * b.im + a.im * b.re;
    return r;
}
__device__ __forceinline__ gs_complex128 operator*(gs_complex128 a, gs_complex128 b) {
    gs_complex128 r;
    r.re = a.re * b.re - a.im * b.im;
    r.im = a.re * b.im + a.im * b.re;
    return r;
}
__device__ __forceinline__ bool operator==(gs_complex64 a, gs_complex64 b) {
    return a.re == b.re && a.im == b.im;
}
__device__ __forceinline__ bool operator==(gs_complex128 a, gs_complex128 b) {
    return a.re == b.re && a.im == b.im;
}
__device__ __forceinline__ bool operator!=(gs_complex64 a, gs_complex64 b) { return !(a == b); }
__device__ __forceinline__ bool operator!=(gs_complex128 a, gs_complex128 b) { return !(a == b); }

// --------------------------------------------------------------------------
// Value traits
// --------------------------------------------------------------------------

// Unsigned twin of an integer type, for arithmetic that wraps without the
// undefined behaviour of signed overflow.
template <typename T> struct gs_unsigned { typedef T type; };
template <> struct gs_unsigned<signed char> { typedef unsigned char type; };
template <> struct gs_unsigned<short> { typedef unsigned short type; };
template <> struct gs_unsigned<int> { typedef unsigned int type; };
template <> struct gs_unsigned<long long> { typedef unsigned long long type; };

template <typename T> struct gs_limits;
template <> struct gs_limits<bool> {
    static __device__ __forceinline__ bool lowest() { return false; }
    static __device__ __forceinline__ bool highest() { return true; }
};
template <> struct gs_limits<signed char> {
    static __device__ __forceinline__ signed char lowest() { return -128; }
    static __device__ __forceinline__ signed char highest() { return 127; }
};
template <> struct gs_limits<unsigned char> {
    static __device__ __forceinline__ unsigned char lowest() { return 0; }
    static __device__ __forceinline__ unsigned char highest() { return 255; }
};
template <> struct gs_limits<short> {
    static __device__ __forceinline__ short lowest() { return -32768; }
    static __device__ __forceinline__ short highest() { return 32767; }
};
template <> struct gs_limits<unsigned short> {
    static __device__ __forceinline__ unsigned short lowest() { return 0; }
    static __device__ __forceinline__ unsigned short highest() { return 65535; }
};
template <> struct gs_limits<int> {
    static __device__ __forceinline__ int lowest() { return -2147483647 - 1; }
    static __device__ __forceinline__ int highest() { return 2147483647; }
};
template <> struct gs_limits<unsigned int> {
    static __device__ __forceinline__ unsigned int lowest() { return 0u; }
    static __device__ __forceinline__ unsigned int highest() { return 4294967295u; }
};
template <> struct gs_limits<long long> {
    static __device__ __forceinline__ long long lowest() { return -9223372036854775807LL - 1; }
    static __device__ __forceinline__ long long highest() { return 9223372036854775807LL; }
};
template <> struct gs_limits<unsigned long long> {
    static __device__ __forceinline__ unsigned long long lowest() { return 0ull; }
    static __device__ __forceinline__ unsigned long long highest() { return 18446744073709551615ull; }
};
// Floats: +-inf, the true identities of min and max (as the CPU twin uses).
template <> struct gs_limits<float> {
    static __device__ __forceinline__ float lowest() { return __int_as_float(static_cast<int>(0xff800000u)); }
    static __device__ __forceinline__ float highest() { return __int_as_float(0x7f800000); }
};
template <> struct gs_limits<double> {
    static __device__ __forceinline__ double lowest() {
        return __longlong_as_double(static_cast<long long>(0xfff0000000000000ull));
    }
    static __device__ __forceinline__ double highest() {
        return __longlong_as_double(0x7ff0000000000000LL);
    }
};

// Complex: (+-inf, +-inf), the identities of the lexicographic min / max.
template <> struct gs_limits<gs_complex64> {
    static __device__ __forceinline__ gs_complex64 lowest() {
        gs_complex64 r; r.re = gs_limits<float>::lowest(); r.im = r.re; return r;
    }
    static __device__ __forceinline__ gs_complex64 highest() {
        gs_complex64 r; r.re = gs_limits<float>::highest(); r.im = r.re; return r;
    }
};
template <> struct gs_limits<gs_complex128> {
    static __device__ __forceinline__ gs_complex128 lowest() {
        gs_complex128 r; r.re = gs_limits<double>::lowest(); r.im = r.re; return r;
    }
    static __device__ __forceinline__ gs_complex128 highest() {
        gs_complex128 r; r.re = gs_limits<double>::highest(); r.im = r.re; return r;
    }
};

template <typename T> __device__ __forceinline__ T gs_zero() { return static_cast<T>(0); }
template <typename T> __device__ __forceinline__ T gs_one() { return static_cast<T>(1); }
template <> __device__ __forceinline__ gs_complex64 gs_zero<gs_complex64>() {
    gs_complex64 r; r.re = 0.0f; r.im = 0.0f; return r;
}
template <> __device__ __forceinline__ gs_complex128 gs_zero<gs_complex128>() {
    gs_complex128 r; r.re = 0.0; r.im = 0.0; return r;
}
template <> __device__ __forceinline__ gs_complex64 gs_one<gs_complex64>() {
    gs_complex64 r; r.re = 1.0f; r.im = 0.0f; return r;
}
template <> __device__ __forceinline__ gs_complex128 gs_one<gs_complex128>() {
    gs_complex128 r; r.re = 1.0; r.im = 0.0; return r;
}

// Wrapping add / multiply: through the unsigned twin for integers (NumPy
// wraps; C++ signed overflow is undefined), plain for floats and complex.
template <typename T> __device__ __forceinline__ T gs_add(T a, T b) {
    typedef typename gs_unsigned<T>::type U;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <typename T> __device__ __forceinline__ T gs_mul(T a, T b) {
    typedef typename gs_unsigned<T>::type U;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}
// unsigned short * unsigned short promotes to (signed) int and can overflow
// it (65535 * 65535 > 2**31): multiply in unsigned int instead.
template <> __device__ __forceinline__ unsigned short gs_mul<unsigned short>(unsigned short a, unsigned short b) {
    return static_cast<unsigned short>(static_cast<unsigned int>(a) * static_cast<unsigned int>(b));
}
template <> __device__ __forceinline__ short gs_mul<short>(short a, short b) {
    return static_cast<short>(static_cast<unsigned short>(
        static_cast<unsigned int>(static_cast<unsigned short>(a)) *
        static_cast<unsigned int>(static_cast<unsigned short>(b))));
}
template <> __device__ __forceinline__ bool gs_add<bool>(bool a, bool b) { return a || b; }
template <> __device__ __forceinline__ bool gs_mul<bool>(bool a, bool b) { return a && b; }
template <> __device__ __forceinline__ float gs_add<float>(float a, float b) { return a + b; }
template <> __device__ __forceinline__ float gs_mul<float>(float a, float b) { return a * b; }
template <> __device__ __forceinline__ double gs_add<double>(double a, double b) { return a + b; }
template <> __device__ __forceinline__ double gs_mul<double>(double a, double b) { return a * b; }
template <> __device__ __forceinline__ gs_complex64 gs_add<gs_complex64>(gs_complex64 a, gs_complex64 b) { return a + b; }
template <> __device__ __forceinline__ gs_complex64 gs_mul<gs_complex64>(gs_complex64 a, gs_complex64 b) { return a * b; }
template <> __device__ __forceinline__ gs_complex128 gs_add<gs_complex128>(gs_complex128 a, gs_complex128 b) { return a + b; }
template <> __device__ __forceinline__ gs_complex128 gs_mul<gs_complex128>(gs_complex128 a, gs_complex128 b) { return a * b; }

// --------------------------------------------------------------------------
// Reduction functors. ``op(acc, v)``: ``acc`` holds the earlier elements.
// --------------------------------------------------------------------------

template <typename T> struct gs_sum {
    static __device__ __forceinline__ T identity() { return gs_zero<T>(); }
    __device__ __forceinline__ T operator()(T acc, T v) const { return gs_add<T>(acc, v); }
};

template <typename T> struct gs_prod {
    static __device__ __forceinline__ T identity() { return gs_one<T>(); }
    __device__ __forceinline__ T operator()(T acc, T v) const { return gs_mul<T>(acc, v); }
};

// NaN test and NumPy's order: ``v != v`` is false for every non-float type;
// complex numbers are NaN when either part is and compare lexicographically
// (real part first).
//
// float (and the parts of gs_complex64) compare through their bits: CuPy
// compiles every kernel with -ftz=true, under which float comparisons treat
// subnormal numbers as zero (a subnormal would be "zero" for any/all and tie
// with 0 in min/max). Integer comparisons of the bits are exact whatever the
// flag, as NumPy and the CPU kernels are, and cost the same.
__device__ __forceinline__ unsigned int gs_f32_bits(float v) { return static_cast<unsigned int>(__float_as_int(v)); }
__device__ __forceinline__ bool gs_f32_isnan(float v) { return (gs_f32_bits(v) & 0x7fffffffu) > 0x7f800000u; }
__device__ __forceinline__ bool gs_f32_nonzero(float v) { return (gs_f32_bits(v) << 1) != 0u; }
// An unsigned key whose order is the order of the (non-NaN) floats; -0 and +0 map to one key.
__device__ __forceinline__ unsigned int gs_f32_key(float v) {
    unsigned int b = gs_f32_bits(v);
    if ((b << 1) == 0u) b = 0u;
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ bool gs_f32_less(float a, float b) { return gs_f32_key(a) < gs_f32_key(b); }
__device__ __forceinline__ bool gs_f32_equal(float a, float b) { return gs_f32_key(a) == gs_f32_key(b); }

template <typename T> __device__ __forceinline__ bool gs_isnan(T v) { return v != v; }
template <> __device__ __forceinline__ bool gs_isnan<float>(float v) { return gs_f32_isnan(v); }
template <> __device__ __forceinline__ bool gs_isnan<gs_complex64>(gs_complex64 v) {
    return gs_f32_isnan(v.re) || gs_f32_isnan(v.im);
}
template <> __device__ __forceinline__ bool gs_isnan<gs_complex128>(gs_complex128 v) {
    return v.re != v.re || v.im != v.im;
}
template <typename T> __device__ __forceinline__ bool gs_less(T a, T b) { return a < b; }
template <> __device__ __forceinline__ bool gs_less<float>(float a, float b) { return gs_f32_less(a, b); }
template <> __device__ __forceinline__ bool gs_less<gs_complex64>(gs_complex64 a, gs_complex64 b) {
    return gs_f32_less(a.re, b.re) || (gs_f32_equal(a.re, b.re) && gs_f32_less(a.im, b.im));
}
template <> __device__ __forceinline__ bool gs_less<gs_complex128>(gs_complex128 a, gs_complex128 b) {
    return a.re < b.re || (a.re == b.re && a.im < b.im);
}
template <typename T> __device__ __forceinline__ bool gs_nonzero(T v) { return v != gs_zero<T>(); }
template <> __device__ __forceinline__ bool gs_nonzero<bool>(bool v) { return v; }
template <> __device__ __forceinline__ bool gs_nonzero<float>(float v) { return gs_f32_nonzero(v); }
template <> __device__ __forceinline__ bool gs_nonzero<gs_complex64>(gs_complex64 v) {
    return gs_f32_nonzero(v.re) || gs_f32_nonzero(v.im);
}

// Whether ``v`` (later) replaces ``acc`` (earlier) as the minimum / maximum:
// a NaN wins and then stays (the first NaN, as np.minimum and np.argmin);
// ties keep the earlier element.
template <typename T> __device__ __forceinline__ bool gs_better_min(T v, T acc) {
    return !gs_isnan<T>(acc) && (gs_isnan<T>(v) || gs_less<T>(v, acc));
}
template <typename T> __device__ __forceinline__ bool gs_better_max(T v, T acc) {
    return !gs_isnan<T>(acc) && (gs_isnan<T>(v) || gs_less<T>(acc, v));
}

template <typename T> struct gs_min {
    static __device__ __forceinline__ T identity() { return gs_limits<T>::highest(); }
    __device__ __forceinline__ T operator()(T acc, T v) const { return gs_better_min<T>(v, acc) ? v : acc; }
};

template <typename T> struct gs_max {
    static __device__ __forceinline__ T identity() { return gs_limits<T>::lowest(); }
    __device__ __forceinline__ T operator()(T acc, T v) const { return gs_better_max<T>(v, acc) ? v : acc; }
};

template <> struct gs_min<bool> {
    static __device__ __forceinline__ bool identity() { return true; }
    __device__ __forceinline__ bool operator()(bool acc, bool v) const { return acc && v; }
};
template <> struct gs_max<bool> {
    static __device__ __forceinline__ bool identity() { return false; }
    __device__ __forceinline__ bool operator()(bool acc, bool v) const { return acc || v; }
};

template <typename T, int OP> struct gs_reducer;
template <typename T> struct gs_reducer<T, GS_OP_SUM> : gs_sum<T> {};
template <typename T> struct gs_reducer<T, GS_OP_PROD> : gs_prod<T> {};
template <typename T> struct gs_reducer<T, GS_OP_MIN> : gs_min<T> {};
template <typename T> struct gs_reducer<T, GS_OP_MAX> : gs_max<T> {};

// --------------------------------------------------------------------------
// Warp helpers
// --------------------------------------------------------------------------

__device__ __forceinline__ unsigned int gs_lane_id() { return threadIdx.x & (GS_WARP - 1); }

// Bits of the lanes below the calling lane.
__device__ __forceinline__ unsigned int gs_lanemask_lt() {
    return (1u << gs_lane_id()) - 1u;
}

// Mask of the lanes whose low BITS bits of ``label`` equal the calling
// lane's (the calling lane included). Every lane of the warp must call it.
// A ballot per bit: faster than match.any.sync for a few bits (CUB's
// MatchAny makes the same choice).
template <int BITS>
__device__ __forceinline__ unsigned int gs_match_label(unsigned int label) {
    unsigned int peers = GS_FULL_MASK;
#pragma unroll
    for (int b = 0; b < BITS; ++b) {
        const bool bit = (label >> b) & 1u;
        const unsigned int vote = __ballot_sync(GS_FULL_MASK, bit);
        peers &= bit ? vote : ~vote;
    }
    return peers;
}

// __shfl_down_sync for every value type (sub-word types travel as int).
template <typename T>
__device__ __forceinline__ T gs_shfl_down(T v, unsigned int delta) {
    return __shfl_down_sync(GS_FULL_MASK, v, delta);
}
template <> __device__ __forceinline__ bool gs_shfl_down<bool>(bool v, unsigned int delta) {
    return __shfl_down_sync(GS_FULL_MASK, static_cast<int>(v), delta) != 0;
}
template <> __device__ __forceinline__ signed char gs_shfl_down<signed char>(signed char v, unsigned int delta) {
    return static_cast<signed char>(__shfl_down_sync(GS_FULL_MASK, static_cast<int>(v), delta));
}
template <> __device__ __forceinline__ unsigned char gs_shfl_down<unsigned char>(unsigned char v, unsigned int delta) {
    return static_cast<unsigned char>(__shfl_down_sync(GS_FULL_MASK, static_cast<unsigned int>(v), delta));
}
template <> __device__ __forceinline__ short gs_shfl_down<short>(short v, unsigned int delta) {
    return static_cast<short>(__shfl_down_sync(GS_FULL_MASK, static_cast<int>(v), delta));
}
template <> __device__ __forceinline__ unsigned short gs_shfl_down<unsigned short>(unsigned short v, unsigned int delta) {
    return static_cast<unsigned short>(__shfl_down_sync(GS_FULL_MASK, static_cast<unsigned int>(v), delta));
}
template <> __device__ __forceinline__ gs_complex64 gs_shfl_down<gs_complex64>(gs_complex64 v, unsigned int delta) {
    gs_complex64 r;
    r.re = __shfl_down_sync(GS_FULL_MASK, v.re, delta);
    r.im = __shfl_down_sync(GS_FULL_MASK, v.im, delta);
    return r;
}
template <> __device__ __forceinline__ gs_complex128 gs_shfl_down<gs_complex128>(gs_complex128 v, unsigned int delta) {
    gs_complex128 r;
    r.re = __shfl_down_sync(GS_FULL_MASK, v.re, delta);
    r.im = __shfl_down_sync(GS_FULL_MASK, v.im, delta);
    return r;
}

// (value, row) state of argmin / argmax; row -1 while nothing was seen.
// Layout: the value, then the row at offset roundup(sizeof(T), 8): 16 bytes
// for every T of at most 8 bytes, 32 for gs_complex128 (launchers size the
// carry buffers from this; checked below).
template <typename T> struct gs_arg_state {
    T v;
    long long row;
};
static_assert(sizeof(gs_arg_state<double>) == 16, "gs_arg_state layout");
static_assert(sizeof(gs_arg_state<bool>) == 16, "gs_arg_state layout");
static_assert(sizeof(gs_arg_state<gs_complex64>) == 16, "gs_arg_state layout");
static_assert(sizeof(gs_arg_state<gs_complex128>) == 32, "gs_arg_state layout");

template <typename T>
__device__ __forceinline__ gs_arg_state<T> gs_shfl_down(gs_arg_state<T> s, unsigned int delta) {
    gs_arg_state<T> r;
    r.v = gs_shfl_down(s.v, delta);
    r.row = __shfl_down_sync(GS_FULL_MASK, s.row, delta);
    return r;
}

// Full-warp tree reduction; every lane must call it. The result is valid in
// lane 0. Deltas grow (1, 2, 4, ...), so after each step lane l (a multiple
// of 2 * delta) holds lanes [l, l + 2 * delta) combined in lane order, the
// earlier lanes on the left: order-preserving (first-wins ties of argmin /
// argmax stay right) and deterministic.
template <typename T, typename Op>
__device__ __forceinline__ T gs_warp_reduce(T v, Op op) {
#pragma unroll
    for (unsigned int delta = 1; delta < GS_WARP; delta <<= 1) {
        T other = gs_shfl_down(v, delta);  // overloads: gs_arg_state
        v = op(v, other);  // lanes that are not multiples of 2 * delta hold garbage, never read
    }
    return v;
}

// Inclusive warp scan (sum) of integers; every lane must call it.
template <typename T>
__device__ __forceinline__ T gs_warp_inclusive_sum(T v) {
    const unsigned int lane = gs_lane_id();
#pragma unroll
    for (unsigned int delta = 1; delta < GS_WARP; delta <<= 1) {
        T other = __shfl_up_sync(GS_FULL_MASK, v, delta);
        if (lane >= delta) v += other;
    }
    return v;
}

// --------------------------------------------------------------------------
// Block helpers (blockDim.x a multiple of 32, at most 1024, 1-D blocks)
// --------------------------------------------------------------------------

// Inclusive block scan (sum) of integers. Every thread of the block must call
// it (it contains __syncthreads). ``s_warp`` is shared scratch of at least
// 32 elements; ``total`` receives the block-wide sum. Safe to call again
// right away with the same scratch.
template <typename T>
__device__ __forceinline__ T gs_block_inclusive_sum(T v, T* s_warp, T& total) {
    const unsigned int lane = gs_lane_id();
    const unsigned int warp = threadIdx.x / GS_WARP;
    const unsigned int n_warps = blockDim.x / GS_WARP;
    T x = gs_warp_inclusive_sum<T>(v);
    __syncthreads();  // a previous call may still be reading s_warp
    if (lane == GS_WARP - 1) s_warp[warp] = x;
    __syncthreads();
    if (warp == 0) {
        T w = lane < n_warps ? s_warp[lane] : static_cast<T>(0);
        w = gs_warp_inclusive_sum<T>(w);
        if (lane < n_warps) s_warp[lane] = w;
    }
    __syncthreads();
    total = s_warp[n_warps - 1];
    return warp > 0 ? x + s_warp[warp - 1] : x;
}

// Block-wide sum of integers, valid in every thread. Same contract as above.
template <typename T>
__device__ __forceinline__ T gs_block_sum(T v, T* s_warp) {
    T total;
    (void)gs_block_inclusive_sum<T>(v, s_warp, total);
    return total;
}

// 64-bit flat index of the calling thread in a 1-D grid. Computed in 64
// bits: blockIdx.x * blockDim.x in 32 bits wraps past 2**32 threads (and an
// int result past 2**31).
__device__ __forceinline__ long long gs_global_thread() {
    return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}

// 64-bit number of threads of a 1-D grid: the stride of a grid-stride loop.
// Launchers clamp gridDim.x to the device limit (2**31 - 1), so every
// per-item kernel loops over its items with this stride, and every
// per-tile kernel over its tiles with a stride of gridDim.x.
__device__ __forceinline__ long long gs_grid_stride() {
    return static_cast<long long>(gridDim.x) * blockDim.x;
}

// --------------------------------------------------------------------------
// Memory safety whatever the values of the integer inputs
// --------------------------------------------------------------------------
//
// The contract of the primitive layer (gpusparse._kernels): a value that
// breaks a precondition never makes a kernel leave its buffers. A read
// through an index clips it into range, a write to a destination outside the
// output is dropped, an indptr entry is clipped into [0, nnz] and a row whose
// end lies before its start is empty; loops bounded by data stay bounded by
// the buffers. Each helper is a compare and a select on a value the kernel
// has already loaded: no pass of its own.

// x clipped into [lo, hi] (lo <= hi).
__device__ __forceinline__ long long gs_clamp(long long x, long long lo, long long hi) {
    return x < lo ? lo : (x > hi ? hi : x);
}

// Index i clipped into [0, n - 1], the row a read through i takes; n >= 1
// (a buffer of no rows is never read: launchers handle it).
__device__ __forceinline__ long long gs_clip_index(long long i, long long n) {
    return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

// Whether a write to row i of a buffer of n rows lands inside it.
__device__ __forceinline__ bool gs_in_range(long long i, long long n) {
    return i >= 0 && i < n;
}

// The positions [lo, hi) of row r of a compressed structure whose indptr
// points into nnz entries: both pointers clipped into [0, nnz], hi >= lo.
template <typename I>
__device__ __forceinline__ void gs_row_range(const I* indptr, long long r, long long nnz, long long& lo,
                                             long long& hi) {
    lo = gs_clamp(static_cast<long long>(indptr[r]), 0, nnz);
    hi = gs_clamp(static_cast<long long>(indptr[r + 1]), lo, nnz);
}

// The part [j_lo, j_hi) of the run start + j, 0 <= j < length, that lies in
// [0, n) (empty, j_lo == j_hi, when none does or length <= 0). Exact for
// every int64 start and length: no intermediate value overflows.
__device__ __forceinline__ void gs_run_window(long long start, long long length, long long n, long long& j_lo,
                                              long long& j_hi) {
    j_lo = 0;
    j_hi = 0;
    if (length <= 0 || start >= n || start <= -length) return;  // -length > INT64_MIN
    j_lo = start < 0 ? -start : 0;  // start > -length, so -start does not overflow
    // n - start > 0 fits in 64 unsigned bits.
    const unsigned long long room = static_cast<unsigned long long>(n) - static_cast<unsigned long long>(start);
    j_hi = room < static_cast<unsigned long long>(length) ? static_cast<long long>(room) : length;
}

// Largest lo in [lo, hi] with a[lo - 1] <= x, i.e. the first index in
// [lo, hi) whose value exceeds x (hi when none does). ``a`` sorted ascending;
// for any other ``a`` the search still reads only a[lo, hi) and returns some
// index in [lo, hi] (lo > hi: returns lo, reads nothing).
template <typename I>
__device__ __forceinline__ long long gs_upper_bound(const I* a, long long lo, long long hi, long long x) {
    while (lo < hi) {
        const long long mid = lo + ((hi - lo) >> 1);
        if (static_cast<long long>(a[mid]) <= x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// First index in [lo, hi) whose value is >= x (hi when none is); bounded as
// gs_upper_bound whatever ``a`` holds.
template <typename I>
__device__ __forceinline__ long long gs_lower_bound(const I* a, long long lo, long long hi, long long x) {
    while (lo < hi) {
        const long long mid = lo + ((hi - lo) >> 1);
        if (static_cast<long long>(a[mid]) < x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

#endif  // GPUSPARSE_COMMON_CUH
