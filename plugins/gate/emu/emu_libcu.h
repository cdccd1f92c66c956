// SparkTrace CPU emulator: the pieces of libcu++ (namespace cuda) that the cuda/*
// shims share: thread scopes, memory orders, aligned sizes, and the emulated
// barrier every asynchronous-copy API completes through.
//
// Asynchronous copies are performed at their wait, never at the call: the call
// fills the destination with 0xff bytes (NaN as float), so a thread that reads
// a staged tile before waiting reads poison and fails the gate every time.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "cuda_emu.h"

namespace cuda {
enum thread_scope { thread_scope_system = 0, thread_scope_device = 1, thread_scope_block = 2, thread_scope_thread = 3 };
enum memory_order { memory_order_relaxed, memory_order_consume, memory_order_acquire, memory_order_release,
                    memory_order_acq_rel, memory_order_seq_cst };
namespace std {
using namespace ::std;
using ::cuda::memory_order;
using ::cuda::memory_order_relaxed;
using ::cuda::memory_order_consume;
using ::cuda::memory_order_acquire;
using ::cuda::memory_order_release;
using ::cuda::memory_order_acq_rel;
using ::cuda::memory_order_seq_cst;
using ::cuda::thread_scope;
using ::cuda::thread_scope_system;
using ::cuda::thread_scope_device;
using ::cuda::thread_scope_block;
using ::cuda::thread_scope_thread;
}  // namespace std

// A size with a promised alignment: the emulator checks the promise (a GPU would not).
template <size_t Align>
struct aligned_size_t {
    static constexpr size_t align = Align;
    size_t value;
    explicit aligned_size_t(size_t v) : value(v) {}
    operator size_t() const { return value; }
};

enum class async_contract_fulfillment { none, async };

inline void atomic_thread_fence(memory_order, thread_scope = thread_scope_system) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
}  // namespace cuda

// ---------------------------------------------------------------- shape helpers
template <class Shape>
struct emu_shape {
    static constexpr size_t align = 1;
};
template <size_t A>
struct emu_shape<cuda::aligned_size_t<A>> {
    static constexpr size_t align = A;
};

template <class Shape>
static inline unsigned long emu_checked_size(void* dst, const void* src, const Shape& size, const char* what) {
    const size_t n = (size_t)size, a = emu_shape<Shape>::align;
    if (a > 1) {
        if ((uintptr_t)dst % a) emu_fail("%s: cuda::aligned_size_t<%zu> promises %zu-byte alignment, but the destination %p is not %zu-byte aligned", what, a, a, dst, a);
        if ((uintptr_t)src % a) emu_fail("%s: cuda::aligned_size_t<%zu> promises %zu-byte alignment, but the source %p is not %zu-byte aligned", what, a, a, src, a);
        if (n % a) emu_fail("%s: cuda::aligned_size_t<%zu>(%zu): the size is not a multiple of %zu bytes", what, a, n, a);
    }
    return (unsigned long)n;
}

// ---------------------------------------------------------------- the emulated barrier
// A phase completes when its arrivals have counted down to zero and its transaction-counted
// copies (memcpy_async_tx) carry as many bytes as expect_tx / arrive_tx declared (in either
// order, as on a GPU; more bytes than declared is an error, fewer never completes: a hang on a
// GPU, a deadlock report here). Its copies then become due: the first wait that sees the phase
// complete performs them (in issue order), so even the thread whose arrival completed the
// phase reads poison if it reads before waiting.
static constexpr unsigned EMU_BAR_MAGIC = 0x5ba7b0c1u;
struct emu_bar {
    unsigned magic;
    int expected, pending;
    int first, last;  // copies completed by this phase
    int due_first, due_last;  // copies of completed phases, performed by the next wait
    long long tx;     // transaction bytes expected (expect_tx) by this phase
    long long txcopied;  // transaction bytes its counted copies carry
    unsigned long long phase;
    unsigned long long rtime;  // race check: when the last phase completed (emu_race_release)
};

EMU_NOSAN static inline void emu_bar_init(emu_bar* b, long long expected, const char* what) {
    if (expected < 0 || expected > (1 << 20)) emu_fail("%s: init with an expected count of %lld", what, expected);
    b->magic = EMU_BAR_MAGIC;
    b->expected = b->pending = (int)expected;
    b->first = b->last = b->due_first = b->due_last = -1;
    b->tx = b->txcopied = 0;
    b->phase = 0;
    b->rtime = 0;
}
EMU_NOSAN static inline emu_bar* emu_bar_check(emu_bar* b, const char* what) {
    if (b->magic != EMU_BAR_MAGIC)
        emu_fail("%s on a barrier that was never initialized (call init() on it, with a __syncthreads() "
                 "before other threads use it)", what);
    return b;
}
EMU_NOSAN static inline void emu_bar_maybe_complete(emu_bar* b, const char* what) {
    if (b->pending || b->txcopied < b->tx) return;
    if (b->txcopied > b->tx)
        emu_fail("%s: the barrier phase's copies carry %lld transaction bytes but only %lld were declared "
                 "(expect_tx / arrive_tx); on a GPU the phase's count would be corrupted", what, b->txcopied, b->tx);
    emu_copy_move(&b->first, &b->last, &b->due_first, &b->due_last);
    b->tx = b->txcopied = 0;
    b->pending = b->expected;
    b->phase++;
    b->rtime = emu_race_release();
}
EMU_NOSAN static inline unsigned long long emu_bar_arrive(emu_bar* b, long long n, const char* what) {
    emu_bar_check(b, what);
    if (n < 1 || n > b->pending)
        emu_fail("%s: %lld arrivals, but only %d are still expected in this phase", what, n, b->pending);
    unsigned long long ph = b->phase;
    b->pending -= (int)n;
    emu_bar_maybe_complete(b, what);
    return ph;
}
EMU_NOSAN static inline void emu_bar_drop(emu_bar* b, const char* what) {
    emu_bar_check(b, what);
    if (b->expected < 1) emu_fail("%s: arrive_and_drop on a barrier that expects no arrivals", what);
    b->expected--;
    b->pending--;
    emu_bar_maybe_complete(b, what);
}
struct emu_bar_wait_arg {
    emu_bar* b;
    unsigned long long phase;
    int parity;  // 0/1: wait_parity; -1: wait for the phase after `phase`
};
EMU_NOSAN static inline int emu_bar_done(void* a) {
    emu_bar_wait_arg* w = (emu_bar_wait_arg*)a;
    return w->parity < 0 ? w->b->phase != w->phase : (int)(w->b->phase & 1) != w->parity;
}
EMU_NOSAN static inline void emu_bar_wait(emu_bar* b, unsigned long long token, const char* what) {
    emu_bar_check(b, what);
    emu_bar_wait_arg w = {b, token, -1};
    emu_wait_until(emu_bar_done, &w, what);
    emu_race_acquire(b->rtime);
    emu_copy_flush(&b->due_first, &b->due_last);
}
EMU_NOSAN static inline void emu_bar_wait_parity(emu_bar* b, int parity, const char* what) {
    emu_bar_check(b, what);
    emu_bar_wait_arg w = {b, 0, parity};
    emu_wait_until(emu_bar_done, &w, what);
    emu_race_acquire(b->rtime);
    emu_copy_flush(&b->due_first, &b->due_last);
}
// try_wait: true (and the copies performed) when the phase after `token` has completed
EMU_NOSAN static inline bool emu_bar_try(emu_bar* b, unsigned long long token, int parity, const char* what) {
    emu_bar_check(b, what);
    emu_bar_wait_arg w = {b, token, parity};
    if (!emu_bar_done(&w)) return false;
    emu_race_acquire(b->rtime);
    emu_copy_flush(&b->due_first, &b->due_last);
    return true;
}
EMU_NOSAN static inline void emu_bar_attach(emu_bar* b, void* dst, const void* src, unsigned long n, int tx, const char* what) {
    emu_bar_check(b, what);
    emu_copy_attach(&b->first, &b->last, dst, src, n, tx, what);
    if (tx) {
        b->txcopied += (long long)n;
        emu_bar_maybe_complete(b, what);
    }
}
EMU_NOSAN static inline void emu_bar_expect_tx(emu_bar* b, long long n, const char* what) {
    emu_bar_check(b, what)->tx += n;
    emu_bar_maybe_complete(b, what);
}

// The calling thread's rank in a cooperative group (or 0 for a thread itself).
template <class Group>
static inline unsigned long long emu_group_rank(const Group& g) { return (unsigned long long)g.thread_rank(); }
