// gpusparse: the CUDA built-ins for running cuda_kernels/*.cu on the CPU.
//
// Test infrastructure, not a device: a translation unit includes this header,
// then one unmodified kernel family (`#include "segment.cu"`), and exports a
// launcher for one template instantiation (see launch() below and
// gpusparse/_kernels/cuda_emulation/_build.py). Compiled with the host C++
// compiler (g++ -std=c++17), optionally with -fsanitize=address.
//
// Execution model
//   * A grid runs block by block, in an order shuffled by the launch seed
//     (CUDA promises no order between blocks).
//   * The threads of a block are cooperative fibers (ucontext), one stack
//     each. A thread runs until it reaches a barrier or a warp collective,
//     then yields. __syncthreads{,_or,_and,_count} wait for every thread of
//     the block; __syncwarp, __shfl*_sync and __ballot_sync / __any_sync /
//     __all_sync wait for every lane of their mask, and exchange values when
//     the last one arrives.
//   * Between two barriers the threads run one after the other, in an order
//     shuffled by the seed at every barrier: a missing barrier makes a thread
//     read what another has not written yet, and the result comes out wrong
//     instead of right by luck. seed 0 keeps thread-index order (no shuffle).
//   * Misuse that hangs or is undefined on a GPU is reported as an error:
//     a barrier some threads of the block never reach (they returned early,
//     or wait at a warp collective), a lane calling a collective with a mask
//     that leaves it out, two collectives of one warp with different masks or
//     kinds, a shuffle from a lane that does not take part.
//   * __shared__ variables are function-local statics: one per kernel
//     instantiation, shared by the threads of the block that runs.
//   * Atomics are plain read-modify-writes (one thread runs at a time).
//
// Not emulated: timing, the memory model (every write is visible at once),
// warp-synchronous execution without __syncwarp (which CUDA does not promise
// either), floating-point details of the GPU (fused multiply-adds, fast-math
// intrinsics), textures, dynamic parallelism, cooperative groups.

#ifndef GPUSPARSE_CUDA_RUNTIME_EMULATION_H
#define GPUSPARSE_CUDA_RUNTIME_EMULATION_H

#include <ucontext.h>
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/common_interface_defs.h>
#define GS_EMU_ASAN 1
#else
#define GS_EMU_ASAN 0
#endif

// --------------------------------------------------------------------------
// Keywords
// --------------------------------------------------------------------------

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __shared__ static
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

struct gs_emu_uint3 {
    unsigned int x, y, z;
};
typedef gs_emu_uint3 uint3;

namespace gs_emu {

// --------------------------------------------------------------------------
// Fibers and the block scheduler
// --------------------------------------------------------------------------

enum WarpOp { OP_SYNCWARP, OP_SHFL, OP_SHFL_UP, OP_SHFL_DOWN, OP_SHFL_XOR, OP_BALLOT, OP_ANY, OP_ALL };

inline const char* warp_op_name(int op) {
    static const char* names[] = {"__syncwarp", "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync",
                                  "__shfl_xor_sync", "__ballot_sync", "__any_sync", "__all_sync"};
    return names[op];
}

enum BlockOp { BAR_SYNC, BAR_OR, BAR_AND, BAR_COUNT };

enum FiberState { RUNNABLE, AT_BARRIER, AT_WARP_OP, DONE };

struct Fiber {
    ucontext_t ctx;
    gs_emu_uint3 idx;
    unsigned int linear;
    int state;
    unsigned long long result;  // of the last collective this thread took part in
    char* stack;
    size_t stack_size;
    void* fake_stack;  // AddressSanitizer's bookkeeping of a suspended stack
};

struct WarpCollective {
    unsigned int mask;     // lanes taking part (0: none pending)
    unsigned int arrived;  // lanes that have arrived
    int op;
    int width;
    int param[32];  // each lane's source lane, delta or lane mask
    unsigned long long value[32];
};

struct Runtime {
    ucontext_t scheduler;
    std::vector<Fiber> fibers;
    std::vector<WarpCollective> warps;
    std::vector<int> runnable;  // fibers to run in the next round
    int block_op;
    unsigned int block_arrived;
    unsigned long long block_acc;
    Fiber* current;
    unsigned int n_threads;
    unsigned int n_alive;
    gs_emu_uint3 block_idx, block_dim, grid_dim;
    unsigned long long rng;
    bool shuffle;
    bool failed;
    char error[512];
    void (*body)(void*);
    void* body_arg;
    void* main_fake_stack;
    const void* main_stack_bottom;
    size_t main_stack_size;
};

inline thread_local Runtime* rt = nullptr;

// splitmix64: the shuffles' random numbers.
inline unsigned long long next_random(unsigned long long& state) {
    unsigned long long z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

template <typename T>
inline void shuffle(std::vector<T>& items, unsigned long long& state) {
    for (size_t i = items.size(); i > 1; --i) {
        const size_t j = static_cast<size_t>(next_random(state) % i);
        T tmp = items[i - 1];
        items[i - 1] = items[j];
        items[j] = tmp;
    }
}

// Fiber stacks, kept between launches (mapped lazily by the kernel).
inline size_t stack_bytes() { return GS_EMU_ASAN ? (512u << 10) : (128u << 10); }

inline std::vector<char*>& stack_pool() {
    static thread_local std::vector<char*> pool;
    return pool;
}

inline char* stack_for(unsigned int i) {
    std::vector<char*>& pool = stack_pool();
    while (pool.size() <= i) {
        void* p = mmap(nullptr, stack_bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (p == MAP_FAILED) return nullptr;
        pool.push_back(static_cast<char*>(p));
    }
    return pool[i];
}

inline void fail(const char* message) {
    if (!rt->failed) {
        rt->failed = true;
        if (rt->current != nullptr) {
            std::snprintf(rt->error, sizeof(rt->error), "%s (block (%u, %u, %u), thread (%u, %u, %u))", message,
                          rt->block_idx.x, rt->block_idx.y, rt->block_idx.z, rt->current->idx.x,
                          rt->current->idx.y, rt->current->idx.z);
        } else {
            std::snprintf(rt->error, sizeof(rt->error), "%s (block (%u, %u, %u))", message, rt->block_idx.x,
                          rt->block_idx.y, rt->block_idx.z);
        }
    }
}

// Switch from the running fiber to the scheduler; returns when the scheduler
// resumes this fiber.
inline void yield_to_scheduler(bool dying = false) {
    Fiber* self = rt->current;
#if GS_EMU_ASAN
    __sanitizer_start_switch_fiber(dying ? nullptr : &self->fake_stack, rt->main_stack_bottom,
                                   rt->main_stack_size);
#else
    (void)dying;
#endif
    swapcontext(&self->ctx, &rt->scheduler);
#if GS_EMU_ASAN
    __sanitizer_finish_switch_fiber(self->fake_stack, nullptr, nullptr);
#endif
    if (rt->failed) {  // the launch was abandoned: never run kernel code again
        yield_to_scheduler(true);
    }
}

inline void fiber_entry() {
#if GS_EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &rt->main_stack_bottom, &rt->main_stack_size);
#endif
    rt->body(rt->body_arg);
    rt->current->state = DONE;
    rt->n_alive -= 1;
    for (;;) yield_to_scheduler(true);
}

inline void resume(Fiber* f) {
    rt->current = f;
#if GS_EMU_ASAN
    __sanitizer_start_switch_fiber(&rt->main_fake_stack, f->stack, f->stack_size);
#endif
    swapcontext(&rt->scheduler, &f->ctx);
#if GS_EMU_ASAN
    __sanitizer_finish_switch_fiber(rt->main_fake_stack, &rt->main_stack_bottom, &rt->main_stack_size);
#endif
    rt->current = nullptr;
}

inline void make_runnable(Fiber* f) {
    f->state = RUNNABLE;
    rt->runnable.push_back(static_cast<int>(f->linear));
}

inline void report_stall() {
    unsigned int at_barrier = 0, at_warp = 0;
    int first_warp_op = -1;
    for (const Fiber& f : rt->fibers) {
        if (f.state == AT_BARRIER) ++at_barrier;
        if (f.state == AT_WARP_OP) {
            if (first_warp_op < 0) first_warp_op = rt->warps[f.linear / 32].op;
            ++at_warp;
        }
    }
    const unsigned int exited = rt->n_threads - rt->n_alive;
    char text[400];
    std::snprintf(text, sizeof(text),
                  "deadlock: %u thread(s) wait at __syncthreads, %u at a warp collective%s%s, %u of %u "
                  "have returned; a barrier that not every thread of the block (or every lane of the "
                  "mask) reaches is undefined behaviour on a GPU",
                  at_barrier, at_warp, first_warp_op >= 0 ? " such as " : "",
                  first_warp_op >= 0 ? warp_op_name(first_warp_op) : "", exited, rt->n_threads);
    fail(text);
}

// Runs every thread of the current block to completion. False on error.
inline bool run_block() {
    Runtime& r = *rt;
    const unsigned int n = r.n_threads;
    r.runnable.clear();
    r.block_arrived = 0;
    r.block_acc = 0;
    r.n_alive = n;
    for (WarpCollective& w : r.warps) {
        w.mask = 0;
        w.arrived = 0;
    }
    for (unsigned int t = 0; t < n; ++t) {
        Fiber& f = r.fibers[t];
        f.linear = t;
        f.idx.x = t % r.block_dim.x;
        f.idx.y = (t / r.block_dim.x) % r.block_dim.y;
        f.idx.z = t / (r.block_dim.x * r.block_dim.y);
        f.state = RUNNABLE;
        f.result = 0;
        f.fake_stack = nullptr;
        f.stack = stack_for(t);
        f.stack_size = stack_bytes();
        if (f.stack == nullptr) {
            fail("could not map a fiber stack");
            return false;
        }
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = f.stack;
        f.ctx.uc_stack.ss_size = f.stack_size;
        f.ctx.uc_link = nullptr;
        makecontext(&f.ctx, fiber_entry, 0);
        r.runnable.push_back(static_cast<int>(t));
    }
    std::vector<int> round;
    while (r.n_alive > 0) {
        if (r.runnable.empty()) {
            r.current = nullptr;
            report_stall();
            return false;
        }
        round.swap(r.runnable);
        r.runnable.clear();
        if (r.shuffle) shuffle(round, r.rng);
        for (int t : round) {
            resume(&r.fibers[t]);
            if (r.failed) return false;
        }
    }
    return true;
}

// --------------------------------------------------------------------------
// Block barriers
// --------------------------------------------------------------------------

inline int block_barrier(int op, int predicate) {
    Runtime& r = *rt;
    Fiber* self = r.current;
    if (r.block_arrived == 0) {
        r.block_op = op;
        r.block_acc = op == BAR_AND ? 1 : 0;
    } else if (r.block_op != op) {
        fail("threads of one block wait at different kinds of __syncthreads");
        yield_to_scheduler();
    }
    const bool p = predicate != 0;
    if (op == BAR_OR) r.block_acc |= p;
    if (op == BAR_AND) r.block_acc &= p;
    if (op == BAR_COUNT) r.block_acc += p;
    self->state = AT_BARRIER;
    r.block_arrived += 1;
    if (r.block_arrived == r.n_threads) {  // every thread, exited ones never arrive
        for (Fiber& f : r.fibers) {
            if (f.state == AT_BARRIER) {
                f.result = r.block_acc;
                make_runnable(&f);
            }
        }
        r.block_arrived = 0;
    }
    yield_to_scheduler();
    return static_cast<int>(self->result);
}

// --------------------------------------------------------------------------
// Warp collectives
// --------------------------------------------------------------------------

inline unsigned int lane_of(const Fiber* f) { return f->linear & 31u; }

inline unsigned int warp_lanes(unsigned int warp) {
    const unsigned int first = warp * 32u;
    const unsigned int left = rt->n_threads - first;
    const unsigned int count = left < 32u ? left : 32u;
    return count == 32u ? 0xffffffffu : ((1u << count) - 1u);
}

inline void complete_warp(WarpCollective& w, unsigned int warp) {
    for (unsigned int lane = 0; lane < 32; ++lane) {
        if (!((w.mask >> lane) & 1u)) continue;
        Fiber& f = rt->fibers[warp * 32u + lane];
        unsigned long long result = 0;
        const int width = w.width;
        const unsigned int seg = lane & ~static_cast<unsigned int>(width - 1);
        const int param = w.param[lane];
        int src = -1;
        switch (w.op) {
            case OP_SYNCWARP:
                break;
            case OP_SHFL:
                src = static_cast<int>(seg + (static_cast<unsigned int>(param) & (width - 1)));
                break;
            case OP_SHFL_UP:
                src = (lane - seg) >= static_cast<unsigned int>(param) ? static_cast<int>(lane) - param
                                                                       : static_cast<int>(lane);
                break;
            case OP_SHFL_DOWN:
                src = (lane - seg) + static_cast<unsigned int>(param) < static_cast<unsigned int>(width)
                          ? static_cast<int>(lane) + param
                          : static_cast<int>(lane);
                break;
            case OP_SHFL_XOR: {
                const unsigned int other = lane ^ static_cast<unsigned int>(param);
                src = other < seg + static_cast<unsigned int>(width) ? static_cast<int>(other)
                                                                      : static_cast<int>(lane);
                break;
            }
            case OP_BALLOT:
            case OP_ANY:
            case OP_ALL: {
                unsigned int bits = 0;
                for (unsigned int l = 0; l < 32; ++l) {
                    if (((w.mask >> l) & 1u) && w.value[l] != 0) bits |= 1u << l;
                }
                if (w.op == OP_BALLOT) result = bits;
                if (w.op == OP_ANY) result = bits != 0;
                if (w.op == OP_ALL) result = bits == w.mask;
                break;
            }
        }
        if (src >= 0) {
            if (src > 31 || !((w.mask >> src) & 1u)) {
                char text[200];
                std::snprintf(text, sizeof(text),
                              "%s: lane %u reads lane %d, which does not take part (mask 0x%08x); the "
                              "value would be undefined on a GPU",
                              warp_op_name(w.op), lane, src, w.mask);
                fail(text);
                return;
            }
            result = w.value[src];
        }
        f.result = result;
        make_runnable(&f);
    }
    w.mask = 0;
    w.arrived = 0;
}

inline unsigned long long warp_collective(int op, unsigned int mask, unsigned long long value, int param,
                                          int width) {
    Runtime& r = *rt;
    Fiber* self = r.current;
    const unsigned int lane = lane_of(self);
    const unsigned int warp = self->linear / 32u;
    WarpCollective& w = r.warps[warp];
    char text[240];
    if (!((mask >> lane) & 1u)) {
        std::snprintf(text, sizeof(text), "%s called by lane %u with mask 0x%08x, which leaves it out",
                      warp_op_name(op), lane, mask);
        fail(text);
        yield_to_scheduler();
    }
    if (mask & ~warp_lanes(warp)) {
        std::snprintf(text, sizeof(text), "%s: mask 0x%08x names lanes the warp does not have", warp_op_name(op),
                      mask);
        fail(text);
        yield_to_scheduler();
    }
    if (width < 1 || width > 32 || (width & (width - 1)) != 0) {
        std::snprintf(text, sizeof(text), "%s: width %d is not a power of 2 in [1, 32]", warp_op_name(op), width);
        fail(text);
        yield_to_scheduler();
    }
    if (w.arrived == 0) {
        w.mask = mask;
        w.op = op;
        w.width = width;
    } else if (w.mask != mask || w.op != op || w.width != width) {
        std::snprintf(text, sizeof(text),
                      "lanes of warp %u meet at different warp collectives: %s with mask 0x%08x (width %d) "
                      "and %s with mask 0x%08x (width %d)",
                      warp, warp_op_name(w.op), w.mask, w.width, warp_op_name(op), mask, width);
        fail(text);
        yield_to_scheduler();
    }
    w.param[lane] = param;
    w.value[lane] = value;
    w.arrived |= 1u << lane;
    self->state = AT_WARP_OP;
    if (w.arrived == w.mask) complete_warp(w, warp);
    yield_to_scheduler();
    return self->result;
}

template <typename T>
inline unsigned long long to_bits(T v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "shuffled values are at most 8 bytes");
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    return bits;
}

template <typename T>
inline T from_bits(unsigned long long bits) {
    T v;
    std::memcpy(&v, &bits, sizeof(T));
    return v;
}

// --------------------------------------------------------------------------
// Launch
// --------------------------------------------------------------------------

template <typename Tuple, typename... Args, size_t... I>
inline void unpack(Tuple& values, void* const* args, std::index_sequence<I...>) {
    (std::memcpy(static_cast<void*>(&std::get<I>(values)), args[I], sizeof(std::get<I>(values))), ...);
}

template <typename... Args>
struct Call {
    void (*kernel)(Args...);
    std::tuple<std::decay_t<Args>...> values;
    static void run(void* self) {
        Call* c = static_cast<Call*>(self);
        std::apply(c->kernel, c->values);
    }
};

// Kinds of kernel parameters, for the launcher's argument check.
template <typename T>
inline char param_kind() {
    if (std::is_pointer<T>::value) return 'p';
    if (std::is_same<T, bool>::value) return 'b';
    if (std::is_floating_point<T>::value) return 'f';
    if (std::is_integral<T>::value) return std::is_signed<T>::value ? 'i' : 'u';
    return 'v';
}

template <typename... Args>
inline int describe(void (*)(Args...), unsigned long long* sizes, char* kinds, int capacity) {
    const int n = static_cast<int>(sizeof...(Args));
    if (n <= capacity) {
        int i = 0;
        ((sizes[i] = sizeof(std::decay_t<Args>), kinds[i] = param_kind<std::decay_t<Args>>(), ++i), ...);
    }
    return n;
}

// Runs kernel<<<grid, block>>>(args...). ``args[i]`` points at the bytes of
// argument i, as cuLaunchKernel takes them. Returns 0, or 1 with a message.
template <typename... Args>
inline int launch(void (*kernel)(Args...), const unsigned int* grid, const unsigned int* block, void* const* args,
                  unsigned long long seed, char* error, size_t error_size) {
    Call<Args...> call;
    call.kernel = kernel;
    unpack<decltype(call.values), Args...>(call.values, args, std::index_sequence_for<Args...>{});

    Runtime r;
    Runtime* outer = rt;
    rt = &r;
    r.block_dim = {block[0], block[1], block[2]};
    r.grid_dim = {grid[0], grid[1], grid[2]};
    r.n_threads = block[0] * block[1] * block[2];
    r.shuffle = seed != 0;
    r.rng = seed;
    r.error[0] = '\0';
    r.failed = false;
    r.current = nullptr;
    r.body = &Call<Args...>::run;
    r.body_arg = &call;
    r.main_fake_stack = nullptr;
    r.main_stack_bottom = nullptr;
    r.main_stack_size = 0;
    int status = 0;
    if (r.n_threads == 0 || r.n_threads > 1024 || block[2] > 64 || grid[0] == 0 || grid[1] == 0 ||
        grid[2] == 0 || grid[1] > 65535 || grid[2] > 65535) {
        fail("invalid launch configuration (empty grid or block, more than 1024 threads per block, or a grid "
             "dimension beyond CUDA's limits)");
    } else {
        r.fibers.resize(r.n_threads);
        r.warps.resize((r.n_threads + 31) / 32);
        const unsigned long long n_blocks =
            static_cast<unsigned long long>(grid[0]) * grid[1] * grid[2];
        std::vector<unsigned long long> order(n_blocks);
        for (unsigned long long b = 0; b < n_blocks; ++b) order[b] = b;
        if (r.shuffle) shuffle(order, r.rng);
        for (unsigned long long b : order) {
            r.block_idx.x = static_cast<unsigned int>(b % grid[0]);
            r.block_idx.y = static_cast<unsigned int>((b / grid[0]) % grid[1]);
            r.block_idx.z = static_cast<unsigned int>(b / (static_cast<unsigned long long>(grid[0]) * grid[1]));
            if (!run_block()) break;
        }
    }
    if (r.failed) {
        std::snprintf(error, error_size, "%s", r.error);
        status = 1;
    }
    rt = outer;
    return status;
}

}  // namespace gs_emu

// --------------------------------------------------------------------------
// Built-in variables
// --------------------------------------------------------------------------

#define threadIdx (gs_emu::rt->current->idx)
#define blockIdx (gs_emu::rt->block_idx)
#define blockDim (gs_emu::rt->block_dim)
#define gridDim (gs_emu::rt->grid_dim)
#define warpSize 32

// --------------------------------------------------------------------------
// Synchronisation
// --------------------------------------------------------------------------

inline void __syncthreads() { gs_emu::block_barrier(gs_emu::BAR_SYNC, 0); }
inline int __syncthreads_or(int p) { return gs_emu::block_barrier(gs_emu::BAR_OR, p); }
inline int __syncthreads_and(int p) { return gs_emu::block_barrier(gs_emu::BAR_AND, p); }
inline int __syncthreads_count(int p) { return gs_emu::block_barrier(gs_emu::BAR_COUNT, p); }
inline void __threadfence() {}
inline void __threadfence_block() {}

inline void __syncwarp(unsigned int mask = 0xffffffffu) {
    gs_emu::warp_collective(gs_emu::OP_SYNCWARP, mask, 0, 0, 32);
}
inline unsigned int __ballot_sync(unsigned int mask, int p) {
    return static_cast<unsigned int>(gs_emu::warp_collective(gs_emu::OP_BALLOT, mask, p != 0, 0, 32));
}
inline int __any_sync(unsigned int mask, int p) {
    return static_cast<int>(gs_emu::warp_collective(gs_emu::OP_ANY, mask, p != 0, 0, 32));
}
inline int __all_sync(unsigned int mask, int p) {
    return static_cast<int>(gs_emu::warp_collective(gs_emu::OP_ALL, mask, p != 0, 0, 32));
}

template <typename T>
inline T __shfl_sync(unsigned int mask, T v, int src_lane, int width = 32) {
    return gs_emu::from_bits<T>(
        gs_emu::warp_collective(gs_emu::OP_SHFL, mask, gs_emu::to_bits(v), src_lane, width));
}
template <typename T>
inline T __shfl_up_sync(unsigned int mask, T v, unsigned int delta, int width = 32) {
    return gs_emu::from_bits<T>(gs_emu::warp_collective(gs_emu::OP_SHFL_UP, mask, gs_emu::to_bits(v),
                                                        static_cast<int>(delta), width));
}
template <typename T>
inline T __shfl_down_sync(unsigned int mask, T v, unsigned int delta, int width = 32) {
    return gs_emu::from_bits<T>(gs_emu::warp_collective(gs_emu::OP_SHFL_DOWN, mask, gs_emu::to_bits(v),
                                                        static_cast<int>(delta), width));
}
template <typename T>
inline T __shfl_xor_sync(unsigned int mask, T v, int lane_mask, int width = 32) {
    return gs_emu::from_bits<T>(
        gs_emu::warp_collective(gs_emu::OP_SHFL_XOR, mask, gs_emu::to_bits(v), lane_mask, width));
}

// --------------------------------------------------------------------------
// Atomics (one thread runs at a time: plain read-modify-writes)
// --------------------------------------------------------------------------

#define GS_EMU_ATOMIC(NAME, UPDATED)         \
    template <typename T>                    \
    inline T NAME(T* address, T v) {         \
        const T old = *address;              \
        *address = (UPDATED);                \
        return old;                          \
    }
GS_EMU_ATOMIC(atomicAdd, old + v)
GS_EMU_ATOMIC(atomicSub, old - v)
GS_EMU_ATOMIC(atomicMin, v < old ? v : old)
GS_EMU_ATOMIC(atomicMax, old < v ? v : old)
GS_EMU_ATOMIC(atomicExch, v)
GS_EMU_ATOMIC(atomicAnd, old & v)
GS_EMU_ATOMIC(atomicOr, old | v)
GS_EMU_ATOMIC(atomicXor, old ^ v)
#undef GS_EMU_ATOMIC

template <typename T>
inline T atomicCAS(T* address, T compare, T v) {
    const T old = *address;
    if (old == compare) *address = v;
    return old;
}

// --------------------------------------------------------------------------
// Integer and bit intrinsics, type punning, min / max
// --------------------------------------------------------------------------

inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned int>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline unsigned int __brev(unsigned int x) {
    unsigned int r = 0;
    for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}

inline float __int_as_float(int x) { return gs_emu::from_bits<float>(static_cast<unsigned int>(x)); }
inline float __uint_as_float(unsigned int x) { return gs_emu::from_bits<float>(x); }
inline int __float_as_int(float x) { return static_cast<int>(gs_emu::to_bits(x)); }
inline unsigned int __float_as_uint(float x) { return static_cast<unsigned int>(gs_emu::to_bits(x)); }
inline double __longlong_as_double(long long x) {
    return gs_emu::from_bits<double>(static_cast<unsigned long long>(x));
}
inline long long __double_as_longlong(double x) { return static_cast<long long>(gs_emu::to_bits(x)); }

// CUDA's overloads of min and max, for any pair of arithmetic types: the
// usual arithmetic conversions pick the type, as they pick CUDA's overload.
template <typename A, typename B>
inline typename std::common_type<A, B>::type min(A a, B b) {
    typedef typename std::common_type<A, B>::type C;
    return static_cast<C>(b) < static_cast<C>(a) ? static_cast<C>(b) : static_cast<C>(a);
}
template <typename A, typename B>
inline typename std::common_type<A, B>::type max(A a, B b) {
    typedef typename std::common_type<A, B>::type C;
    return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b) : static_cast<C>(a);
}

// The entry points a translation unit exports for one kernel instantiation:
//   static const auto gs_emu_kernel = &gs_segment_reduce<double, 0>;
//   GS_EMU_EXPORT(gs_emu_kernel)
#define GS_EMU_EXPORT(KERNEL)                                                                              \
    extern "C" int gs_emu_launch(const unsigned int* grid, const unsigned int* block, void* const* args,   \
                                 unsigned long long seed, char* error, size_t error_size) {                \
        return gs_emu::launch(KERNEL, grid, block, args, seed, error, error_size);                         \
    }                                                                                                      \
    extern "C" int gs_emu_describe(unsigned long long* sizes, char* kinds, int capacity) {                 \
        return gs_emu::describe(KERNEL, sizes, kinds, capacity);                                           \
    }

#endif  // GPUSPARSE_CUDA_RUNTIME_EMULATION_H
