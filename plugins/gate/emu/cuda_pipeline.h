// SparkTrace CPU emulator: <cuda_pipeline.h> primitives. Each thread's copies form cp.async
// groups: __pipeline_commit() closes one, __pipeline_wait_prior(N) performs every committed
// group but the newest N. Until then the shared-memory destination holds 0xff bytes.
#pragma once
#include "emu_libcu.h"

static inline void __pipeline_memcpy_async(void* dst, const void* src, size_t size_and_align, size_t zfill = 0) {
    const char* what = "__pipeline_memcpy_async";
    if (size_and_align != 4 && size_and_align != 8 && size_and_align != 16)
        emu_fail("%s: size_and_align = %zu; it must be 4, 8 or 16", what, size_and_align);
    if ((uintptr_t)dst % size_and_align || (uintptr_t)src % size_and_align)
        emu_fail("%s: dst %p and src %p must both be %zu-byte aligned", what, dst, src, size_and_align);
    if (!emu_in_shared(dst, size_and_align)) emu_fail("%s: the destination %p is not this block's shared memory", what, dst);
    emu_async_issue(dst, src, size_and_align, zfill, what);
}
static inline void __pipeline_commit() { emu_async_commit(); }
static inline void __pipeline_wait_prior(size_t prior) { emu_async_wait_prior(prior); }
