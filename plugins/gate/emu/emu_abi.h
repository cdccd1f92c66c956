// SparkTrace CPU emulator: the data shared by the runtime (emu_runtime.cpp)
// and the device prelude (cuda_emu.h). Kept free of system headers so that a
// kernel's file-scope names cannot clash with libc.
#pragma once
#include <stdint.h>

#define EMU_HIDDEN __attribute__((visibility("hidden")))
#define EMU_EXPORT extern "C" __attribute__((visibility("default")))
// Prelude code that touches shared memory on the emulator's behalf (atomics, barrier state) is not
// instrumented for the race check: an atomic is no race, and a barrier's own bookkeeping is not the
// kernel's. Not always_inline: g++ drops the attribute when it inlines into instrumented code.
#define EMU_NOSAN __attribute__((no_sanitize_thread))

struct uint3 { unsigned int x, y, z; };
struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

// EMU_AT_WAIT: waiting until a condition holds (a barrier phase, a cluster barrier, a pipeline stage)
enum emu_state { EMU_RUNNABLE = 0, EMU_AT_BAR = 1, EMU_AT_WARP = 2, EMU_AT_GRID = 3, EMU_EXITED = 4, EMU_AT_WAIT = 5 };

enum emu_warp_op_kind {
    EMU_OP_SYNCWARP = 0, EMU_OP_SHFL, EMU_OP_BALLOT, EMU_OP_ANY, EMU_OP_ALL,
    EMU_OP_RED_ADD_U, EMU_OP_RED_ADD_I, EMU_OP_RED_MIN_U, EMU_OP_RED_MIN_I,
    EMU_OP_RED_MAX_U, EMU_OP_RED_MAX_I, EMU_OP_RED_AND, EMU_OP_RED_OR, EMU_OP_RED_XOR,
    EMU_OP_MATCH_ANY, EMU_OP_MATCH_ALL,
    EMU_OP_COLLECTIVE,  // a warp-wide function run once when every lane of the mask has arrived (WMMA's mma_sync)
};

// A warp collective: called once with each participating lane's argument (args[lane], 0 elsewhere).
typedef void (*emu_collective_fn)(void** args, unsigned mask);
typedef int (*emu_wait_pred)(void* arg);

enum emu_bar_kind { EMU_BAR_PLAIN = 0, EMU_BAR_COUNT, EMU_BAR_AND, EMU_BAR_OR };

struct emu_block;
struct emu_cluster;

// One CUDA thread: a fiber. The first cache line holds everything a barrier
// touches; the prelude reads tid, lane and blk.
struct alignas(64) emu_thread {
    uint3 tid;                 // threadIdx
    unsigned lane;
    emu_block* blk;
    void* sp;                  // saved stack pointer (x86-64 switch)
    int state;
    int wop;                   // pending warp-level operation (or barrier kind)
    int bar_pred;
    unsigned wmask;
    const char* what;          // name of the sync point it waits at
    unsigned wsrc;
    unsigned linear;
    // second line: values exchanged by warp operations, and the portable context
    unsigned long long wval, wres;
    unsigned warp;
    void* uctx;                // ucontext_t* (portable fallback)
    emu_collective_fn wfn;     // EMU_OP_COLLECTIVE's function
    emu_wait_pred wpred;       // EMU_AT_WAIT's condition and its argument
    void* warg;
    // asynchronous copies this thread issued (cp.async groups; bulk stores), performed at their wait:
    // lists of records in the launch's copy pool, and the groups committed / completed so far
    int aq_first, aq_last, bq_first, bq_last;
    unsigned a_committed, b_committed;
    unsigned long long ctoken;  // the cluster barrier phase this thread last arrived on
    // race check (emu_runtime.cpp, "shared-memory race check"): accesses recorded before these
    // times are ordered before this thread's next one: by the block (barriers, barrier phases it
    // waited on), by the cluster (cluster.sync, grid.sync), by its whole warp (a full __syncwarp)
    unsigned long long rfloor, rcfloor, rwfloor;
};
static_assert(__builtin_offsetof(emu_thread, wval) == 64, "a barrier's fields fit one cache line");

// One CUDA block: its index, its shared memory, its threads.
struct emu_block {
    uint3 idx;                 // blockIdx
    char* dyn_smem;            // extern __shared__ (launch's shared_bytes)
    char* static_smem;         // base of the __shared__ arrays: they lie below it (negative offsets)
    emu_thread* threads;
    unsigned n;
    unsigned n_exited, n_bar, n_warp, n_grid;
    int bar_result;
    int done;
    unsigned n_wait;           // threads at EMU_AT_WAIT
    unsigned crank;            // rank in its cluster (0 without clusters)
    struct emu_cluster* cl;    // the cluster it belongs to (a cluster of one without __cluster_dims__)
    unsigned long slot;        // its shared-memory arena
};

// A thread-block cluster: its CTAs run concurrently; cluster.sync() is a barrier over all their threads.
struct emu_cluster {
    emu_block* blocks[8];
    unsigned n;                // CTAs in the cluster
    unsigned expected, arrived;
    unsigned long long phase;
    unsigned long long rtime;  // race check: when its last phase completed
};

// What a launch reports back to Python (mirrored by ctypes in emulate.py).
struct emu_status {
    int32_t code;              // 0 ok, 1 error (msg), 2 signal, 3 timeout, 4 shared-memory race (msg, race_pc)
    int32_t signo;
    int32_t si_code;
    int32_t region;            // 0 unknown, 1 fiber stack guard, 2 past dynamic shared, 3 past static shared,
                               // 4 exited cluster block, 5 before static shared, 6 before dynamic shared
    uint64_t addr;
    int32_t in_thread;
    uint32_t tid[3];
    uint32_t bid[3];
    uint32_t pad;
    double seconds;
    uint64_t switches;
    char msg[1024];
    uint64_t race_pc[2];       // code 4 (a shared-memory race): the two accesses, as offsets in the kernel's library
};

extern "C" {
EMU_HIDDEN extern emu_thread* emu_cur;
EMU_HIDDEN extern dim3 emu_block_dim;
EMU_HIDDEN extern dim3 emu_grid_dim;
EMU_HIDDEN extern int emu_cooperative;
EMU_HIDDEN extern dim3 emu_cluster_dim;
EMU_HIDDEN void emu_syncthreads(const char* what);
EMU_HIDDEN int emu_syncthreads_pred(int kind, int pred, const char* what);
EMU_HIDDEN unsigned long long emu_warp_op(int op, unsigned mask, unsigned long long val, unsigned src, const char* what);
EMU_HIDDEN void emu_grid_sync(const char* what);
EMU_HIDDEN long emu_place_shared(unsigned long size, unsigned long align, const char* name);
EMU_HIDDEN unsigned emu_active_mask(void);
EMU_HIDDEN void emu_warp_collective(emu_collective_fn fn, void* arg, unsigned mask, const char* what);
EMU_HIDDEN void emu_wait_until(emu_wait_pred pred, void* arg, const char* what);
// asynchronous copies: the destination is poisoned (0xff) at the call and written at the wait
EMU_HIDDEN void emu_async_issue(void* dst, const void* src, unsigned long n, unsigned long zfill, const char* what);
EMU_HIDDEN void emu_async_commit(void);
EMU_HIDDEN void emu_async_wait_prior(unsigned long n);
EMU_HIDDEN void emu_copy_attach(int* first, int* last, void* dst, const void* src, unsigned long n, int tx, const char* what);
EMU_HIDDEN long long emu_copy_flush(int* first, int* last);
EMU_HIDDEN long long emu_copy_move(int* first, int* last, int* to_first, int* to_last);
EMU_HIDDEN void emu_bulk_issue(void* dst, const void* src, unsigned long n, const char* what);
EMU_HIDDEN void emu_bulk_commit(void);
EMU_HIDDEN void emu_bulk_wait_prior(unsigned long n);
EMU_HIDDEN int emu_in_shared(const void* p, unsigned long n);
// clusters
EMU_HIDDEN unsigned long long emu_cluster_arrive(const char* what);
EMU_HIDDEN void emu_cluster_wait(unsigned long long token, const char* what);
EMU_HIDDEN void* emu_cluster_map(const void* p, unsigned rank);
EMU_HIDDEN int emu_cluster_query(const void* p);
// race check: a release returns the time that an acquire of it orders the caller after
EMU_HIDDEN unsigned long long emu_race_release(void);
EMU_HIDDEN void emu_race_acquire(unsigned long long t);
EMU_HIDDEN __attribute__((noreturn, format(printf, 1, 2))) void emu_fail(const char* fmt, ...);
}
