// SparkTrace CPU emulator: <cooperative_groups/memcpy_async.h>. A group's memcpy_async is one
// cp.async group per call (issued once for the group, committed by every thread);
// cg::wait / cg::wait_prior<N> perform the copies, then synchronize the group.
#pragma once
#include "../cooperative_groups.h"
#include "../emu_libcu.h"

namespace cooperative_groups {
template <class Group, class Shape>
static inline void memcpy_async(const Group& g, void* dst, const void* src, Shape size) {
    const char* what = "cooperative_groups::memcpy_async";
    unsigned long n = emu_checked_size(dst, src, size, what);
    if (g.thread_rank() == 0) emu_async_issue(dst, src, n, 0, what);
    emu_async_commit();
}
template <class Group>
static inline void wait(const Group& g) {
    emu_async_wait_prior(0);
    g.sync();
}
template <unsigned N, class Group>
static inline void wait_prior(const Group& g) {
    emu_async_wait_prior(N);
    g.sync();
}
}  // namespace cooperative_groups
