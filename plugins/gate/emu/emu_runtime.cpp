// SparkTrace CPU emulator runtime: runs one CUDA launch as fibers in a forked
// child process, so that an out-of-bounds access, a hang or a divergent
// barrier becomes a report in the parent instead of a dead interpreter.
//
// Why fibers: CUDA threads of a block must all reach __syncthreads() before
// any continues, and warp shuffles exchange values between lanes; running each
// thread as a fiber, switched cooperatively at sync points only, gives exactly
// those semantics on one OS thread with no data races. Blocks run one at a time
// (all at once for cooperative launches, which need grid.sync()).
//
// Nothing here allocates with malloc after fork: the parent may have threads,
// and the child must not touch locks they could hold.
#include "emu_abi.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#if defined(__x86_64__) && !defined(EMU_USE_UCONTEXT)
#define EMU_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

extern "C" {
EMU_HIDDEN emu_thread* emu_cur = nullptr;
EMU_HIDDEN dim3 emu_block_dim;
EMU_HIDDEN dim3 emu_grid_dim;
EMU_HIDDEN int emu_cooperative = 0;
EMU_HIDDEN dim3 emu_cluster_dim;
}

namespace {

const unsigned long kStackBytes = 64 * 1024;     // per fiber, plus one guard page
const unsigned long kStaticArena = 64 * 1024;    // __shared__ declarations per block

emu_status* g_st = nullptr;
unsigned long g_page = 4096;
unsigned long long g_switches = 0;
unsigned g_warp_hi = 0;  // end of the lane range run_warp is running
volatile int g_in_fiber = 0;

void (*g_entry)(void**) = nullptr;
void** g_args = nullptr;

// fiber stacks: nstacks slots of (guard page + kStackBytes)
char* g_stacks = nullptr;
unsigned long g_nstacks = 0;
unsigned long g_stack_slot = 0;

// Per-block shared memory arenas: [guard][dyn pages][guard][static arena][guard].
// A GPU faults (or corrupts another CTA) on an access past the block's shared
// allocation; here the used part of each region abuts a PROT_NONE page. Blocks
// alternate between two placements: even blocks (in run order) put the end of
// the used part at the guard above it (overruns fault), odd blocks put its start
// at the guard below it (underruns fault). See place_block_smem.
char* g_arenas = nullptr;
unsigned long g_narenas = 0;
unsigned long g_arena_slot = 0;
unsigned long g_dyn_pages = 0;
unsigned long long g_dyn_bytes = 0;
const unsigned long kDynAlign = 16;    // a GPU guarantees dynamic shared memory at least this alignment
const unsigned long kSharedAlign = 16;  // every __shared__ array starts at least 16-byte aligned

// The static layout, the same in every block: arrays placed downward from the
// block's base (offsets are negative), in the order threads first reach their
// declarations. The first array reached ends at the base.
unsigned long g_static_used = 0;        // bytes below the base holding arrays (and alignment gaps)
unsigned long g_static_align = kSharedAlign;  // the largest alignment any array asked for
struct emu_decl { long off; unsigned long size; const char* name; };
const int kMaxDecls = 256;
emu_decl g_decls[kMaxDecls];
int g_ndecls = 0;
unsigned long long g_block_seq = 0;     // blocks started so far: their parity picks the placement
emu_block* g_group = nullptr;           // the blocks running together now (for layout growth)
unsigned long long g_group_n = 0;

unsigned char* g_arena_dead = nullptr;  // per arena: protected because its block exited before its cluster
unsigned long* g_arena_low = nullptr;   // per arena: bytes at the bottom of its static region protected below a start-anchored layout

// Asynchronous copies waiting for their wait: records in one pool per launch
// child, linked per thread (cp.async groups, bulk stores) or per barrier.
struct emu_copy {
    char* dst;
    const char* src;
    unsigned long n;
    unsigned long zfill;
    unsigned batch;
    int tx;     // counts against the barrier's expected transaction bytes
    int next;
};
const int kCopies = 1 << 20;
emu_copy* g_copies = nullptr;
int g_copy_used = 0, g_copy_free = -1;

emu_cluster* g_clusters = nullptr;

#ifdef EMU_ASM_SWITCH
void* g_sched_sp = nullptr;
#else
ucontext_t g_sched_uc;
#endif

}  // namespace

#ifdef EMU_ASM_SWITCH
// void emu_switch(void** save_sp, void* new_sp): saves the callee-saved
// registers, MXCSR and the x87 control word on the current stack, stores the
// stack pointer, and resumes the other stack. No syscall (unlike swapcontext).
extern "C" EMU_HIDDEN void emu_switch(void** save_sp, void* new_sp);
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl emu_switch\n"
    ".hidden emu_switch\n"
    ".type emu_switch,@function\n"
    "emu_switch:\n"
    "    pushq %rbp\n"
    "    pushq %rbx\n"
    "    pushq %r12\n"
    "    pushq %r13\n"
    "    pushq %r14\n"
    "    pushq %r15\n"
    "    subq $8, %rsp\n"
    "    stmxcsr (%rsp)\n"
    "    fnstcw 4(%rsp)\n"
    "    movq %rsp, (%rdi)\n"
    "    movq %rsi, %rsp\n"
    "    ldmxcsr (%rsp)\n"
    "    fldcw 4(%rsp)\n"
    "    addq $8, %rsp\n"
    "    popq %r15\n"
    "    popq %r14\n"
    "    popq %r13\n"
    "    popq %r12\n"
    "    popq %rbx\n"
    "    popq %rbp\n"
    "    ret\n"
    ".size emu_switch, .-emu_switch\n");
#endif

namespace {

void fmt_idx(char* out, size_t n, uint3 v) { snprintf(out, n, "(%u,%u,%u)", v.x, v.y, v.z); }

void note_thread(void) {
    if (g_st && emu_cur && g_in_fiber) {
        g_st->in_thread = 1;
        g_st->tid[0] = emu_cur->tid.x; g_st->tid[1] = emu_cur->tid.y; g_st->tid[2] = emu_cur->tid.z;
        g_st->bid[0] = emu_cur->blk->idx.x; g_st->bid[1] = emu_cur->blk->idx.y; g_st->bid[2] = emu_cur->blk->idx.z;
    }
}

[[noreturn]] void fail_block(emu_block* b, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void fail_block(emu_block* b, const char* fmt, ...) {
    char where[64];
    fmt_idx(where, sizeof where, b->idx);
    int k = snprintf(g_st->msg, sizeof g_st->msg, "block %s: ", where);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_st->msg + k, sizeof g_st->msg - k, fmt, ap);
    va_end(ap);
    g_st->code = 1;
    _exit(3);
}

// ------------------------------------------------------------------ fibers

void fiber_main(void);

// A fiber that stops at a sync point hands over straight to the next runnable
// lane of the warp being run (one switch instead of two through the scheduler);
// the last one returns to the scheduler.
inline emu_thread* next_runnable(emu_thread* t) {
    emu_thread* th = t->blk->threads;
    for (unsigned j = t->linear + 1; j < g_warp_hi; ++j)
        if (th[j].state == EMU_RUNNABLE) return &th[j];
    return nullptr;
}
#ifdef EMU_ASM_SWITCH
unsigned g_mxcsr = 0x1f80, g_fcw = 0x37f;

void* init_stack(char* top) {
    // Frame popped by emu_switch: [mxcsr|fcw][r15][r14][r13][r12][rbx][rbp][ret=fiber_main][0]
    // placed so that fiber_main starts with rsp = 8 (mod 16), as after a call.
    uint64_t* sp = (uint64_t*)(top - 88);
    uint32_t* cw = (uint32_t*)sp;
    cw[0] = g_mxcsr;
    cw[1] = g_fcw;
    for (int i = 1; i <= 6; ++i) sp[i] = 0;
    sp[7] = (uint64_t)(void*)&fiber_main;
    sp[8] = 0;
    return sp;
}
inline void run_fiber(emu_thread* t) {
    emu_cur = t;
    ++g_switches;
    g_in_fiber = 1;
    emu_switch(&g_sched_sp, t->sp);
    g_in_fiber = 0;
}
inline void yield_fiber(emu_thread* t) {
    emu_thread* nx = next_runnable(t);
    if (nx) {
        emu_cur = nx;
        ++g_switches;
        emu_switch(&t->sp, nx->sp);
    } else {
        emu_switch(&t->sp, g_sched_sp);
    }
}
#else
ucontext_t* g_uctx = nullptr;  // one per stack slot
void init_uctx(emu_thread* t, unsigned long slot) {
    ucontext_t* uc = &g_uctx[slot];
    getcontext(uc);
    uc->uc_stack.ss_sp = g_stacks + slot * g_stack_slot + g_page;
    uc->uc_stack.ss_size = kStackBytes;
    uc->uc_link = nullptr;
    makecontext(uc, fiber_main, 0);
    t->uctx = uc;
}
inline void run_fiber(emu_thread* t) {
    emu_cur = t;
    ++g_switches;
    g_in_fiber = 1;
    swapcontext(&g_sched_uc, (ucontext_t*)t->uctx);
    g_in_fiber = 0;
}
inline void yield_fiber(emu_thread* t) {
    emu_thread* nx = next_runnable(t);
    if (nx) {
        emu_cur = nx;
        ++g_switches;
        swapcontext((ucontext_t*)t->uctx, (ucontext_t*)nx->uctx);
    } else {
        swapcontext((ucontext_t*)t->uctx, &g_sched_uc);
    }
}
#endif

void copies_free(int first);
int count_list(int first);

void fiber_main(void) {
    g_entry(g_args);
    emu_thread* t = emu_cur;
    if (t->bq_first >= 0)
        emu_fail("the thread exits with %d bulk copies (cuda::ptx::cp_async_bulk) not waited for; call "
                 "cp_async_bulk_wait_group_read before exit, or the CTA's shared memory may be gone before they read it",
                 count_list(t->bq_first));
    copies_free(t->aq_first);  // cp.async copies never waited for: their shared memory dies with the block
    t->aq_first = t->aq_last = -1;
    t->state = EMU_EXITED;
    t->blk->n_exited++;
    yield_fiber(t);
    __builtin_trap();  // an exited fiber is never resumed
}

// ------------------------------------------------------------------ memory

void* map_or_fail(unsigned long bytes, const char* what) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        snprintf(g_st->msg, sizeof g_st->msg, "emulator: cannot map %lu bytes for %s (errno %d)", bytes, what, errno);
        g_st->code = 1;
        _exit(3);
    }
    return p;
}

void alloc_stacks(unsigned long n) {
    g_stack_slot = g_page + kStackBytes;
    g_nstacks = n;
    g_stacks = (char*)map_or_fail(n * g_stack_slot, "fiber stacks");
    // a guard page below each stack turns an overflow into a reported fault;
    // past 16384 stacks the kernel's map count would run out, so skip them
    if (n <= 16384)
        for (unsigned long i = 0; i < n; ++i) mprotect(g_stacks + i * g_stack_slot, g_page, PROT_NONE);
#ifndef EMU_ASM_SWITCH
    g_uctx = (ucontext_t*)map_or_fail(n * sizeof(ucontext_t), "fiber contexts");
#endif
}

void race_alloc(unsigned long span);

void alloc_arenas(unsigned long n, unsigned long long dyn_bytes) {
    g_dyn_bytes = dyn_bytes;
    g_dyn_pages = (dyn_bytes + g_page - 1) / g_page;
    g_arena_slot = (g_dyn_pages + 2) * g_page + kStaticArena + g_page;
    g_narenas = n;
    g_arenas = (char*)map_or_fail(n * g_arena_slot, "shared memory");
    g_arena_dead = (unsigned char*)map_or_fail(n, "arena flags");
    g_arena_low = (unsigned long*)map_or_fail(n * sizeof(unsigned long), "arena guards");
    race_alloc(n * g_arena_slot);
    for (unsigned long i = 0; i < n; ++i) {
        char* a = g_arenas + i * g_arena_slot;
        mprotect(a, g_page, PROT_NONE);
        mprotect(a + (g_dyn_pages + 1) * g_page, g_page, PROT_NONE);
        mprotect(a + (g_dyn_pages + 2) * g_page + kStaticArena, g_page, PROT_NONE);
        memset(a + (g_dyn_pages + 2) * g_page, 0xff, kStaticArena);
    }
}

char* arena_dyn_lo(unsigned long i) { return g_arenas + i * g_arena_slot + g_page; }
char* arena_dyn_hi(unsigned long i) { return arena_dyn_lo(i) + g_dyn_pages * g_page; }
char* arena_static(unsigned long i) { return g_arenas + i * g_arena_slot + (g_dyn_pages + 2) * g_page; }
char* arena_static_hi(unsigned long i) { return arena_static(i) + kStaticArena; }

inline unsigned long round_up(unsigned long v, unsigned long a) { return (v + a - 1) / a * a; }

// The array that holds (or borders) byte `off` of the layout: the one whose end is nearest at or below it
// (side > 0), or whose start is nearest at or above it (side < 0).
const emu_decl* decl_near(long off, int side) {
    const emu_decl* best = nullptr;
    for (int k = 0; k < g_ndecls; ++k) {
        const emu_decl* d = &g_decls[k];
        if (side > 0 ? (d->off + (long)d->size <= off && (!best || d->off > best->off))
                     : (d->off >= off && (!best || d->off < best->off)))
            best = d;
    }
    return best;
}

// Region of a faulting address (emu_status.region), and into msg the __shared__ array it borders.
int classify(uint64_t a) {
    if (g_stacks && a >= (uint64_t)g_stacks && a < (uint64_t)g_stacks + g_nstacks * g_stack_slot &&
        (a - (uint64_t)g_stacks) % g_stack_slot < g_page)
        return 1;
    if (g_arenas && a >= (uint64_t)g_arenas && a < (uint64_t)g_arenas + g_narenas * g_arena_slot) {
        unsigned long i = (a - (uint64_t)g_arenas) / g_arena_slot;
        uint64_t off = (a - (uint64_t)g_arenas) % g_arena_slot;
        if (off < g_page) return 6;
        if (off >= (g_dyn_pages + 1) * g_page && off < (g_dyn_pages + 2) * g_page) return 2;
        const emu_decl* d = nullptr;
        int region = 0;
        if (off >= (g_dyn_pages + 2) * g_page + kStaticArena) {
            region = 3;
            d = decl_near(0, 1);  // the array that ends at the base
        } else if (g_arena_dead && g_arena_dead[i]) {
            return 4;
        } else if (g_arena_low && off < (g_dyn_pages + 2) * g_page + g_arena_low[i]) {
            region = 5;
            d = decl_near(-(long)g_static_used, -1);  // the array placed lowest
        }
        if (d && d->name) snprintf(g_st->msg, sizeof g_st->msg, "%s", d->name);
        return region;
    }
    return 0;
}

// Where block b's shared memory lies in its arena. Even blocks: dynamic memory and the static
// arrays end at the guard page above them (up to kDynAlign-1 / alignment bytes of slack, which
// check_slack watches for writes). Odd blocks: both start at the guard page below them (the pages
// under the static arrays are protected for the block's life). A kernel that overruns or underruns
// in every block faults in the first block that has the placement catching it.
void place_block_smem(emu_block* b, unsigned long arena, int start_anchored) {
    char* lo = arena_static(arena);
    if (g_arena_dead[arena]) {  // its last block exited before its cluster: make it usable again
        mprotect(arena_dyn_lo(arena), g_dyn_pages * g_page, PROT_READ | PROT_WRITE);
        mprotect(lo, kStaticArena, PROT_READ | PROT_WRITE);
        g_arena_dead[arena] = 0;
        g_arena_low[arena] = 0;
    }
    if (g_arena_low[arena]) {
        mprotect(lo, g_arena_low[arena], PROT_READ | PROT_WRITE);
        g_arena_low[arena] = 0;
    }
    if (start_anchored) {
        b->dyn_smem = arena_dyn_lo(arena);
        unsigned long used = round_up(g_static_used, g_static_align);
        unsigned long below = kStaticArena - round_up(used, g_page);  // bytes under the page the layout starts on
        b->static_smem = lo + below + used;
        if (g_static_used && below) {
            mprotect(lo, below, PROT_NONE);
            g_arena_low[arena] = below;
        }
    } else {
        b->dyn_smem = arena_dyn_hi(arena) - round_up(g_dyn_bytes, kDynAlign);
        b->static_smem = arena_static_hi(arena);
    }
}

// A block placed start-anchored must have room for arrays first reached after it started: open the
// protected pages they need.
void make_room(emu_block* b, unsigned long used) {
    unsigned long arena = b->slot;
    char* lo = arena_static(arena);
    if (b->static_smem - lo < (long)used)
        emu_fail("__shared__ declarations need more than %lu bytes per block", (unsigned long)(b->static_smem - lo));
    char* need = b->static_smem - used;
    if (g_arena_low[arena] && need < lo + g_arena_low[arena]) {
        unsigned long keep = (unsigned long)(need - lo) / g_page * g_page;
        mprotect(lo + keep, g_arena_low[arena] - keep, PROT_READ | PROT_WRITE);
        g_arena_low[arena] = keep;
    }
}

// Bytes of the layout that belong to no array (alignment gaps, the slack above the first array,
// the rounding after dynamic shared memory) still hold the poison after the block: else a write
// landed just past an array's end.
void check_slack(emu_block* b) {
    const unsigned char* q = (const unsigned char*)b->dyn_smem + g_dyn_bytes;
    for (unsigned long k = 0; k < round_up(g_dyn_bytes, kDynAlign) - g_dyn_bytes; ++k)
        if (q[k] != 0xff) {
            g_st->region = 7;
            fail_block(b, "a write to byte %lu past the end of dynamic shared memory (%llu bytes in the launch plan; "
                       "found when the block exited: the 16-byte rounding kept it off the guard page)", k + 1, g_dyn_bytes);
        }
    long top = 0;  // walking down from the base: the start of the array above
    for (int pass = 0; pass < g_ndecls; ++pass) {
        const emu_decl* d = decl_near(top, 1);
        if (!d) break;
        const unsigned char* p = (const unsigned char*)b->static_smem + d->off + d->size;
        for (long k = 0; k < top - (d->off + (long)d->size); ++k)
            if (p[k] != 0xff) {
                g_st->region = 7;
                fail_block(b, "a write to byte %ld past the end of __shared__ %s (found when the block exited: "
                           "the array's alignment slack kept it off the guard page)",
                           (long)k + 1, d->name ? d->name : "(unnamed)");
            }
        top = d->off;
    }
}


// ------------------------------------------------------------------ shared-memory race check
//
// As compute-sanitizer's racecheck does: every shared-memory access is recorded per byte (the
// kernel is compiled with g++ -fsanitize=thread, whose __tsan_read/__tsan_write calls land here;
// no ThreadSanitizer runtime is linked). Two accesses by different threads to one byte, at least
// one a write, race unless something orders them: a barrier of the block (__syncthreads and its
// variants, a cuda::barrier / pipeline phase the later thread waited on), a __syncwarp whose mask
// names both lanes, cluster.sync() (for another block's shared memory too), grid.sync(). Fibers
// run in index order, so a read of a lower lane's slot comes after its write (read after write)
// and a read of a higher lane's slot before it (write after read): both are caught, the second
// when the write comes. Atomics, the emulator's own barrier state and asynchronous copies (done by
// the runtime at their wait) are not recorded. Ordering is kept as times: a sync point that
// completes takes the next time, and each thread keeps the time before which everything it must
// see is ordered (emu_thread.rfloor and friends); a barrier phase orders its waiters after every
// access made before it completed (by any thread: a miss is possible there, a false race is not).
// WMMA's load/store_matrix_sync converge the warp but order nothing (as on a GPU).

struct race_rec { unsigned long long tt, pc; };  // tt: time << 24 | (thread record + 1); 0 = none
struct race_ring { unsigned n; struct { unsigned long long time; unsigned mask; } h[16]; };  // partial __syncwarps
race_rec* g_shadow = nullptr;      // 3 per byte of the arenas: the last write, two unordered reads
uintptr_t g_shadow_lo = 0;
unsigned long g_shadow_span = 0;
emu_thread* g_thr_base = nullptr;  // thread records of the launch child (indices fit 24 bits)
race_ring* g_rings = nullptr;      // per thread record of a lane 0
unsigned long long g_time = 1;
uintptr_t g_lib_base = 0;

void race_alloc(unsigned long span) {
    g_shadow_lo = (uintptr_t)g_arenas;
    g_shadow_span = span;
    g_shadow = (race_rec*)map_or_fail(span * 3 * sizeof(race_rec), "the race check's shadow memory");
    Dl_info info;
    if (dladdr((void*)&race_alloc, &info) && info.dli_fbase) g_lib_base = (uintptr_t)info.dli_fbase;
}

void race_threads(emu_thread* th, unsigned long n) {
    if (n >= (1ul << 24) - 1) {
        snprintf(g_st->msg, sizeof g_st->msg, "emulator: the race check numbers threads in 24 bits; this launch has %lu", n);
        g_st->code = 1;
        _exit(3);
    }
    g_thr_base = th;
    g_rings = (race_ring*)map_or_fail(n * sizeof(race_ring), "the race check's warp records");
}

inline unsigned long long race_tick(void) { return ++g_time; }

// Is the access recorded in `tt` ordered before thread t's access now?
bool race_ordered(unsigned long long tt, emu_thread* t) {
    if (!tt) return true;
    unsigned long long time = tt >> 24;
    emu_thread* u = g_thr_base + ((tt & 0xffffff) - 1);
    if (u == t || time < t->rcfloor) return true;
    if (u->blk != t->blk) return false;
    if (time < t->rfloor) return true;
    if (u->warp != t->warp) return false;
    if (time < t->rwfloor) return true;
    const race_ring* r = &g_rings[(t - g_thr_base) - t->lane];
    unsigned both = 1u << t->lane | 1u << u->lane;
    unsigned k = r->n, seen = 0;
    for (; k && seen < 16; --k, ++seen) {
        const auto& e = r->h[(k - 1) % 16];
        if (e.time <= time) return false;
        if ((e.mask & both) == both) return true;
    }
    return k != 0;  // older syncwarps fell out of the ring: assume ordered (a miss, never a false race)
}

void race_name(char* out, size_t n, const char* q) {
    for (unsigned long i = 0; i < g_narenas; ++i) {
        emu_block* o = nullptr;
        char* lo = g_arenas + i * g_arena_slot;
        if (q < lo || q >= lo + g_arena_slot) continue;
        // the block now using arena i
        for (unsigned long long k = 0; k < g_group_n && !o; ++k)
            if (g_group[k].slot == i) o = &g_group[k];
        if (!o) break;
        if (g_dyn_bytes && q >= o->dyn_smem && q < o->dyn_smem + g_dyn_bytes) {
            snprintf(out, n, "dynamic shared memory (extern __shared__), byte %ld", (long)(q - o->dyn_smem));
            return;
        }
        long off = q - o->static_smem;
        for (int k = 0; k < g_ndecls; ++k)
            if (off >= g_decls[k].off && off < g_decls[k].off + (long)g_decls[k].size) {
                snprintf(out, n, "__shared__ %s, byte %ld", g_decls[k].name ? g_decls[k].name : "(unnamed)", off - g_decls[k].off);
                return;
            }
    }
    snprintf(out, n, "shared memory at %p", (const void*)q);
}

[[noreturn]] void race_report(const char* kind, const char* q, emu_thread* t, const race_rec& other, uintptr_t pc) {
    emu_thread* u = g_thr_base + ((other.tt & 0xffffff) - 1);
    char where[160], tb[48], bb[48], ub[48], ubb[48];
    race_name(where, sizeof where, q);
    fmt_idx(tb, sizeof tb, t->tid);
    fmt_idx(bb, sizeof bb, t->blk->idx);
    fmt_idx(ub, sizeof ub, u->tid);
    fmt_idx(ubb, sizeof ubb, u->blk->idx);
    const char* second = kind[0] == 'r' ? "reads" : "writes";
    const char* first = strcmp(kind, "write after read") ? "wrote" : "read";
    snprintf(g_st->msg, sizeof g_st->msg,
             "shared-memory race (%s) on %s: thread %s of block %s %s it after thread %s of block %s %s it, "
             "with nothing ordering them (__syncthreads(), a __syncwarp() naming both lanes, or cluster.sync() "
             "between blocks of a cluster)",
             kind, where, tb, bb, second, ub, ubb, first);
    g_st->race_pc[0] = pc - g_lib_base;
    g_st->race_pc[1] = other.pc ? other.pc - g_lib_base : 0;
    note_thread();
    g_st->code = 4;
    _exit(3);
}

inline void race_access(const void* p, unsigned long n, int write, uintptr_t pc) {
    uintptr_t off = (uintptr_t)p - g_shadow_lo;
    if (off >= g_shadow_span || !g_in_fiber) return;
    if (off + n > g_shadow_span) n = g_shadow_span - off;
    emu_thread* t = emu_cur;
    unsigned long long tt = g_time << 24 | (unsigned long long)(t - g_thr_base + 1);
    // The bytes of one access mostly hold the same three records (a float written whole). What
    // race_ordered answers depends only on a record's tt and on state this loop does not change,
    // so a byte whose three tt equal the previous byte's gets the previous byte's verdict: it
    // passed (else the report has exited) and takes the same update. Any other byte is checked.
    unsigned long long last[3] = {~0ull, ~0ull, ~0ull};
    int keep = 0;  // a read: which reader slot the last checked byte's access took (0: neither)
    for (unsigned long k = 0; k < n; ++k) {
        race_rec* s = &g_shadow[(off + k) * 3];
        const char* q = (const char*)p + k;
        bool same = s[0].tt == last[0] && s[1].tt == last[1] && s[2].tt == last[2];
        if (!same) last[0] = s[0].tt, last[1] = s[1].tt, last[2] = s[2].tt;
        if (write) {
            if (!same) {
                if (!race_ordered(s[0].tt, t)) race_report("write after write", q, t, s[0], pc);
                if (!race_ordered(s[1].tt, t)) race_report("write after read", q, t, s[1], pc);
                if (!race_ordered(s[2].tt, t)) race_report("write after read", q, t, s[2], pc);
            }
            s[0] = race_rec{tt, pc};
            s[1].tt = s[2].tt = 0;
        } else {
            if (!same) {
                if (!race_ordered(s[0].tt, t)) race_report("read after write", q, t, s[0], pc);
                // keep up to two readers no later access is ordered after: a later write races with one of them
                keep = !s[1].tt || race_ordered(s[1].tt, t) ? 1 : !s[2].tt || race_ordered(s[2].tt, t) ? 2 : 0;
            }
            if (keep) s[keep] = race_rec{tt, pc};
        }
    }
}

// A barrier of block b completed: everything before it is ordered before everything after.
void race_block_barrier(emu_block* b) {
    unsigned long long now = race_tick();
    for (unsigned i = 0; i < b->n; ++i) b->threads[i].rfloor = now;
}

// A __syncwarp over `mask` of the warp starting at thread record lo completed.
void race_syncwarp(emu_block* b, unsigned lo, unsigned nl, unsigned mask) {
    unsigned long long now = race_tick();
    unsigned all = nl < 32 ? (1u << nl) - 1 : ~0u;
    if ((mask & all) == all) {
        for (unsigned l = 0; l < nl; ++l) b->threads[lo + l].rwfloor = now;
        return;
    }
    race_ring* r = &g_rings[(b->threads + lo) - g_thr_base];
    r->h[r->n % 16].time = now;
    r->h[r->n % 16].mask = mask;
    r->n++;
}

void race_start_block(emu_block* b) {
    unsigned long long now = race_tick();
    for (unsigned i = 0; i < b->n; ++i) {
        emu_thread* t = &b->threads[i];
        t->rfloor = t->rcfloor = t->rwfloor = now;
        if (!t->lane) g_rings[t - g_thr_base].n = 0;
    }
}

// ------------------------------------------------------------------ blocks

void init_block(emu_block* b, uint3 idx, emu_thread* th, unsigned long first_stack, unsigned long arena) {
    unsigned bx = emu_block_dim.x, by = emu_block_dim.y;
    unsigned n = bx * by * emu_block_dim.z;
    b->idx = idx;
    b->threads = th;
    b->n = n;
    b->n_exited = b->n_bar = b->n_warp = b->n_grid = 0;
    b->done = 0;
    b->n_wait = 0;
    b->crank = 0;
    b->cl = nullptr;
    b->slot = arena;
    place_block_smem(b, arena, (int)(g_block_seq++ & 1));
    // shared memory starts out as garbage on a GPU: poison it (floats read NaN)
    if (g_dyn_bytes) memset(b->dyn_smem, 0xff, round_up(g_dyn_bytes, kDynAlign));
    if (g_static_used) memset(b->static_smem - g_static_used, 0xff, g_static_used);
    for (unsigned i = 0; i < n; ++i) {
        emu_thread* t = &th[i];
        t->tid.x = i % bx;
        t->tid.y = (i / bx) % by;
        t->tid.z = i / (bx * by);
        t->linear = i;
        t->lane = i & 31;
        t->warp = i >> 5;
        t->blk = b;
        t->state = EMU_RUNNABLE;
        t->what = "";
        t->aq_first = t->aq_last = t->bq_first = t->bq_last = -1;
        t->a_committed = t->b_committed = 0;
        unsigned long slot = first_stack + i;
#ifdef EMU_ASM_SWITCH
        // stagger the stack tops across cache sets: equal page offsets would all
        // land in one L1 set and thrash it at every switch
        t->sp = init_stack(g_stacks + slot * g_stack_slot + g_stack_slot - (slot % 64) * 64);
#else
        init_uctx(t, slot);
#endif
    }
    race_start_block(b);
}

const char* op_name(emu_thread* t) { return t->what && *t->what ? t->what : "a sync point"; }

// Complete warp-level operations whose mask lanes have all arrived.
int resolve_warp(emu_block* b, unsigned lo, unsigned hi) {
    emu_thread* th = b->threads + lo;
    unsigned nl = hi - lo;
    unsigned waiting = 0, gone = 0;
    for (unsigned l = 0; l < nl; ++l) {
        if (th[l].state == EMU_AT_WARP) waiting |= 1u << l;
        else if (th[l].state == EMU_EXITED) gone |= 1u << l;
    }
    unsigned absent = nl < 32 ? ~0u << nl : 0u;
    if (!waiting) return 0;
    unsigned release = 0;
    for (unsigned l = 0; l < nl; ++l) {
        if (!(waiting >> l & 1)) continue;
        unsigned m = th[l].wmask;
        if (m & (gone | absent))
            fail_block(b, "warp %u lane %u waits at %s with mask 0x%08x, which names %s lane(s) 0x%08x",
                       lo / 32, l, op_name(&th[l]), m, (m & gone) ? "exited" : "nonexistent (partial warp)",
                       m & (gone | absent));
        if ((m & waiting) == m) release |= 1u << l;
    }
    if (!release) return 0;
    // Every lane a released lane names must be at the same op. The verdict depends only on the
    // lane's (mask, op), so a lane whose pair equals the last one checked is skipped: usually all
    // 32 lanes share one, and the check is one pass per warp op instead of 32 (it was the
    // scheduler's hot loop). Interleaved groups of lanes still cost a pass each.
    unsigned seen_mask = 0;
    int seen_op = 0, seen = 0;
    for (unsigned l = 0; l < nl; ++l) {
        if (!(release >> l & 1)) continue;
        emu_thread* t = &th[l];
        unsigned m = t->wmask;
        if (seen && m == seen_mask && t->wop == seen_op) continue;
        seen = 1;
        seen_mask = m;
        seen_op = t->wop;
        for (unsigned j = 0; j < nl; ++j)
            if ((m >> j & 1) && th[j].wop != t->wop)
                fail_block(b, "warp %u: lane %u is at %s while lane %u, named in its mask 0x%08x, is at %s",
                           lo / 32, l, op_name(t), j, m, op_name(&th[j]));
    }
    unsigned synced = 0;  // __syncwarp orders the lanes of its mask (WMMA's .sync operations use the op too, and order nothing)
    for (unsigned l = 0; l < nl; ++l) {
        if (!(release >> l & 1) || th[l].wop != EMU_OP_SYNCWARP || (synced >> l & 1)) continue;
        synced |= th[l].wmask;
        if (!strncmp(op_name(&th[l]), "wmma::", 6)) continue;
        race_syncwarp(b, lo, nl, th[l].wmask);
    }
    unsigned handled = 0;  // collectives run once per group of lanes
    for (unsigned l = 0; l < nl; ++l) {
        if (!(release >> l & 1) || th[l].wop != EMU_OP_COLLECTIVE || (handled >> l & 1)) continue;
        unsigned m = th[l].wmask;
        void* args[32] = {nullptr};
        for (unsigned j = 0; j < nl; ++j)
            if (m >> j & 1) args[j] = (void*)(uintptr_t)th[j].wval;
        th[l].wfn(args, m);
        handled |= m;
    }
    for (unsigned l = 0; l < nl; ++l) {
        if (!(release >> l & 1)) continue;
        emu_thread* t = &th[l];
        unsigned m = t->wmask;
        unsigned long long r = 0;
        switch (t->wop) {
            case EMU_OP_SYNCWARP: case EMU_OP_COLLECTIVE: break;
            case EMU_OP_MATCH_ANY: case EMU_OP_MATCH_ALL: {
                unsigned same = 0;
                for (unsigned j = 0; j < nl; ++j)
                    if ((m >> j & 1) && th[j].wval == t->wval) same |= 1u << j;
                r = t->wop == EMU_OP_MATCH_ANY ? same : (same == m ? m : 0u);
                break;
            }
            case EMU_OP_SHFL: {
                unsigned s = t->wsrc;
                if (s == l) r = t->wval;
                else if (s < nl && (waiting >> s & 1)) r = th[s].wval;
                else
                    fail_block(b, "warp %u lane %u: %s reads lane %u, which is not taking part (mask 0x%08x)",
                               lo / 32, l, op_name(t), s, m);
                break;
            }
            case EMU_OP_BALLOT: case EMU_OP_ANY: case EMU_OP_ALL: {
                unsigned bits = 0;
                for (unsigned j = 0; j < nl; ++j)
                    if ((m >> j & 1) && th[j].wval) bits |= 1u << j;
                r = t->wop == EMU_OP_BALLOT ? bits : t->wop == EMU_OP_ANY ? (bits != 0) : (bits == m);
                break;
            }
            default: {
                bool first = true;
                unsigned long long acc = 0;
                for (unsigned j = 0; j < nl; ++j) {
                    if (!(m >> j & 1)) continue;
                    unsigned uv = (unsigned)th[j].wval;
                    int iv = (int)uv;
                    unsigned ua = (unsigned)acc;
                    int ia = (int)ua;
                    if (first) { acc = uv; first = false; continue; }
                    switch (t->wop) {
                        case EMU_OP_RED_ADD_U: case EMU_OP_RED_ADD_I: acc = (unsigned)(ua + uv); break;
                        case EMU_OP_RED_MIN_U: acc = uv < ua ? uv : ua; break;
                        case EMU_OP_RED_MAX_U: acc = uv > ua ? uv : ua; break;
                        case EMU_OP_RED_MIN_I: acc = (unsigned)(iv < ia ? iv : ia); break;
                        case EMU_OP_RED_MAX_I: acc = (unsigned)(iv > ia ? iv : ia); break;
                        case EMU_OP_RED_AND: acc = ua & uv; break;
                        case EMU_OP_RED_OR: acc = ua | uv; break;
                        case EMU_OP_RED_XOR: acc = ua ^ uv; break;
                        default: fail_block(b, "emulator: unknown warp operation %d", t->wop);
                    }
                }
                r = acc;
            }
        }
        t->wres = r;
    }
    for (unsigned l = 0; l < nl; ++l)
        if (release >> l & 1) {
            th[l].state = EMU_RUNNABLE;
            b->n_warp--;
        }
    return 1;
}

// Threads of [lo, hi) whose wait condition now holds become runnable; returns how many.
unsigned release_waits(emu_block* b, unsigned lo, unsigned hi) {
    unsigned k = 0;
    for (unsigned i = lo; i < hi; ++i) {
        emu_thread* t = &b->threads[i];
        if (t->state == EMU_AT_WAIT && t->wpred(t->warg)) {
            t->state = EMU_RUNNABLE;
            b->n_wait--;
            ++k;
        }
    }
    return k;
}

void run_warp(emu_block* b, unsigned w) {
    unsigned lo = w * 32, hi = lo + 32 < b->n ? lo + 32 : b->n;
    emu_thread* th = b->threads;
    for (;;) {
        if (b->n_wait) release_waits(b, lo, hi);
        g_warp_hi = hi;
        for (unsigned i = lo; i < hi; ++i)
            if (th[i].state == EMU_RUNNABLE) run_fiber(&th[i]);
        if (b->n_warp && resolve_warp(b, lo, hi)) continue;
        if (b->n_wait && release_waits(b, lo, hi)) continue;
        return;
    }
}

void fail_stuck_warp(emu_block* b) {
    for (unsigned i = 0; i < b->n; ++i) {
        emu_thread* t = &b->threads[i];
        if (t->state != EMU_AT_WARP) continue;
        unsigned lo = i & ~31u;
        for (unsigned j = lo; j < lo + 32 && j < b->n; ++j)
            if ((t->wmask >> (j - lo) & 1) && b->threads[j].state != EMU_AT_WARP)
                fail_block(b, "warp %u lane %u waits at %s (mask 0x%08x) but lane %u is at %s; the warp can never reconverge",
                           i / 32, i - lo, op_name(t), t->wmask, j - lo, op_name(&b->threads[j]));
        fail_block(b, "warp %u lane %u waits at %s (mask 0x%08x) and cannot complete", i / 32, i - lo, op_name(t), t->wmask);
    }
    fail_block(b, "emulator: warp-level wait with no waiting lane");
}

// Run a block until every thread has exited (returns 0), waits at grid.sync() (returns 1),
// or can go no further until another block (or the copy machinery) acts: some threads
// wait on a condition (a barrier phase, a cluster barrier) that does not hold yet (returns 2).
int run_block(emu_block* b) {
    unsigned nw = (b->n + 31) / 32;
    for (;;) {
        for (unsigned w = 0; w < nw; ++w) run_warp(b, w);
        if (b->n_exited == b->n) return 0;
        if (b->n_wait) {
            if (release_waits(b, 0, b->n)) continue;
            return 2;  // the group's scheduler decides whether anything can still move
        }
        if (b->n_warp) fail_stuck_warp(b);
        if (b->n_bar) {
            const char* what = "__syncthreads";
            for (unsigned i = 0; i < b->n; ++i)
                if (b->threads[i].state == EMU_AT_BAR) { what = op_name(&b->threads[i]); break; }
            if (b->n_grid)
                fail_block(b, "%u threads wait at %s while %u wait at grid.sync()", b->n_bar, what, b->n_grid);
            if (b->n_exited)
                fail_block(b, "%u threads wait at %s while %u have exited", b->n_bar, what, b->n_exited);
            int count = 0;
            for (unsigned i = 0; i < b->n; ++i) count += b->threads[i].bar_pred != 0;
            b->bar_result = count;
            race_block_barrier(b);
            for (unsigned i = 0; i < b->n; ++i) b->threads[i].state = EMU_RUNNABLE;
            b->n_bar = 0;
            continue;
        }
        if (b->n_grid) {
            if (b->n_exited)
                fail_block(b, "%u threads wait at grid.sync() while %u have exited", b->n_grid, b->n_exited);
            return 1;
        }
        fail_block(b, "emulator: scheduler made no progress");
    }
}

// A fixed, non-monotonic block order: i -> (a*i + c) mod n with gcd(a, n) = 1.
// Catches kernels that assume blocks run in index order; always the same order.
unsigned long long gcd(unsigned long long a, unsigned long long b) {
    while (b) { unsigned long long t = a % b; a = b; b = t; }
    return a;
}
struct order {
    unsigned long long n, a, c;
    explicit order(unsigned long long n_) : n(n_), a(1), c(0) {
        if (n > 2) {
            a = (unsigned long long)(n * 0.6180339887) + 1;
            while (gcd(a, n) != 1) ++a;
            c = n / 3;
        }
    }
    unsigned long long operator()(unsigned long long i) const {
        if (n <= 2) return n - 1 - i;
        return (unsigned long long)(((unsigned __int128)a * i + c) % n);
    }
};

uint3 block_index(unsigned long long lin) {
    uint3 v;
    v.x = (unsigned)(lin % emu_grid_dim.x);
    v.y = (unsigned)((lin / emu_grid_dim.x) % emu_grid_dim.y);
    v.z = (unsigned)(lin / ((unsigned long long)emu_grid_dim.x * emu_grid_dim.y));
    return v;
}

void on_signal(int sig, siginfo_t* si, void*) {
    if (sig == SIGALRM) {
        g_st->code = 3;
    } else {
        g_st->code = 2;
        g_st->signo = sig;
        g_st->si_code = si ? si->si_code : 0;
        g_st->addr = si ? (uint64_t)si->si_addr : 0;
        g_st->region = classify(g_st->addr);
    }
    note_thread();
    g_st->switches = g_switches;
    _exit(4);
}

void setup_child(double timeout_s) {
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the interpreter that waits for us
#endif
    // the parent's (Python's) handlers are inherited: let Ctrl-C and kill end the child
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    static char altstack[64 * 1024];
    stack_t ss;
    ss.ss_sp = altstack;
    ss.ss_size = sizeof altstack;
    ss.ss_flags = 0;
    sigaltstack(&ss, nullptr);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGALRM};
    for (int s : sigs) sigaction(s, &sa, nullptr);
    sigset_t unblock;
    sigemptyset(&unblock);
    for (int s : sigs) sigaddset(&unblock, s);
    sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
    if (timeout_s > 0) {
        struct itimerval it;
        memset(&it, 0, sizeof it);
        it.it_value.tv_sec = (time_t)timeout_s;
        it.it_value.tv_usec = (suseconds_t)((timeout_s - (double)(time_t)timeout_s) * 1e6);
        if (!it.it_value.tv_sec && !it.it_value.tv_usec) it.it_value.tv_usec = 1;
        setitimer(ITIMER_REAL, &it, nullptr);
    }
}

double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// ------------------------------------------------------------------ groups of blocks run together

void block_exited(emu_block* b) {
    emu_cluster* c = b->cl;
    if (!c || c->n < 2) return;
    for (unsigned r = 0; r < c->n; ++r)
        if (!c->blocks[r]->done) {
            // others of its cluster still run and may read this block's shared memory through
            // map_shared_rank: on a GPU that memory is gone, here any access faults and is named
            mprotect(arena_dyn_lo(b->slot), g_dyn_pages * g_page, PROT_NONE);
            mprotect(arena_static(b->slot), kStaticArena, PROT_NONE);
            g_arena_dead[b->slot] = 1;
            return;
        }
}

[[noreturn]] void fail_deadlock(emu_block* bs, unsigned long long n) {
    int k = snprintf(g_st->msg, sizeof g_st->msg,
                     "no thread can make progress (on a GPU this launch would hang):");
    unsigned shown = 0;
    for (unsigned long long i = 0; i < n && k < (int)sizeof g_st->msg - 160; ++i) {
        emu_block* b = &bs[i];
        if (b->done) continue;
        if (shown++ == 4) { k += snprintf(g_st->msg + k, sizeof g_st->msg - k, " ..."); break; }
        unsigned cnt[6] = {0, 0, 0, 0, 0, 0};
        const char* what[6] = {"", "", "", "", "", ""};
        for (unsigned j = 0; j < b->n; ++j) {
            emu_thread* t = &b->threads[j];
            if (!cnt[t->state]++) what[t->state] = op_name(t);
        }
        char where[64];
        fmt_idx(where, sizeof where, b->idx);
        k += snprintf(g_st->msg + k, sizeof g_st->msg - k, " block %s:", where);
        const int order[] = {EMU_AT_WAIT, EMU_AT_BAR, EMU_AT_WARP, EMU_AT_GRID, EMU_EXITED};
        for (int s : order)
            if (cnt[s] && k < (int)sizeof g_st->msg - 80)
                k += snprintf(g_st->msg + k, sizeof g_st->msg - k, " %u %s%s;", cnt[s],
                              s == EMU_EXITED ? "have exited" : "wait at ", s == EMU_EXITED ? "" : what[s]);
    }
    g_st->code = 1;
    _exit(3);
}

// Run blocks that execute concurrently (one block; a cluster's blocks; a cooperative grid)
// until all have exited. Blocks take turns between sync points in a fixed permuted order.
void run_group(emu_block* bs, unsigned long long n) {
    order go(n);
    g_group = bs;
    g_group_n = n;
    for (;;) {
        unsigned long long before = g_switches, waiting = 0, done = 0, blocked = 0;
        emu_block* at_grid = nullptr;
        for (unsigned long long k = 0; k < n; ++k) {
            emu_block* b = &bs[go(k)];
            if (b->done) { ++done; continue; }
            int r = run_block(b);
            if (r == 0) {
                b->done = 1;
                ++done;
                if (g_ndecls || g_dyn_bytes % kDynAlign) check_slack(b);
                block_exited(b);
            } else if (r == 1) {
                ++waiting;
                at_grid = b;
            } else {
                ++blocked;
            }
        }
        if (done == n) return;
        if (waiting && !blocked) {
            if (!emu_cooperative) {
                g_in_fiber = 0;
                fail_block(at_grid, "grid.sync() needs a cooperative launch; set cooperative = true in the launch plan");
            }
            if (done) {
                snprintf(g_st->msg, sizeof g_st->msg,
                         "%llu blocks wait at grid.sync() while %llu blocks have exited; grid.sync() must be reached by every thread",
                         waiting, done);
                g_st->code = 1;
                _exit(3);
            }
            unsigned long long now = race_tick();
            for (unsigned long long k = 0; k < n; ++k) {
                emu_block* b = &bs[k];
                for (unsigned i = 0; i < b->n; ++i) b->threads[i].rfloor = b->threads[i].rcfloor = now;
                for (unsigned i = 0; i < b->n; ++i)
                    if (b->threads[i].state == EMU_AT_GRID) b->threads[i].state = EMU_RUNNABLE;
                b->n_grid = 0;
            }
            continue;
        }
        if (g_switches == before) fail_deadlock(bs, n);
    }
}

void reset_copies(void) {
    g_copy_used = 0;
    g_copy_free = -1;
}

[[noreturn]] void fail_launch(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void fail_launch(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_st->msg, sizeof g_st->msg, fmt, ap);
    va_end(ap);
    g_st->code = 1;
    _exit(3);
}

[[noreturn]] void child_main(const unsigned* grid, const unsigned* block, const unsigned* cluster,
                             unsigned long long dyn_bytes, int cooperative, unsigned long long max_coop_threads,
                             double timeout_s) {
    setup_child(timeout_s);
    double t0 = now_s();
    g_page = (unsigned long)sysconf(_SC_PAGESIZE);
#ifdef EMU_ASM_SWITCH
    __asm__ volatile("stmxcsr %0" : "=m"(g_mxcsr));
    unsigned short fcw;
    __asm__ volatile("fnstcw %0" : "=m"(fcw));
    g_fcw = fcw;
#endif
    emu_grid_dim = dim3(grid[0], grid[1], grid[2]);
    emu_block_dim = dim3(block[0], block[1], block[2]);
    emu_cluster_dim = dim3(cluster[0], cluster[1], cluster[2]);
    emu_cooperative = cooperative;
    unsigned long long nblocks = (unsigned long long)grid[0] * grid[1] * grid[2];
    unsigned long nthreads = (unsigned long)block[0] * block[1] * block[2];
    unsigned csize = cluster[0] * cluster[1] * cluster[2];
    g_copies = (emu_copy*)map_or_fail((unsigned long)kCopies * sizeof(emu_copy), "the asynchronous copy pool");
    if (csize > 8)
        fail_launch("__cluster_dims__(%u, %u, %u) asks for %u CTAs per cluster; the portable maximum is 8",
                    cluster[0], cluster[1], cluster[2], csize);
    if (grid[0] % cluster[0] || grid[1] % cluster[1] || grid[2] % cluster[2])
        fail_launch("grid (%u, %u, %u) is not a multiple of __cluster_dims__(%u, %u, %u); the launch would fail",
                    grid[0], grid[1], grid[2], cluster[0], cluster[1], cluster[2]);
    if (csize > 1 && cooperative)
        fail_launch("a cooperative launch of a cluster kernel is not supported; launch __cluster_dims__ kernels plainly");
    if (!cooperative) {
        // clusters one at a time (a block is a cluster of one), in a fixed permuted order
        unsigned long long nclusters = nblocks / csize;
        unsigned ncx = grid[0] / cluster[0], ncy = grid[1] / cluster[1];
        alloc_stacks(csize * nthreads);
        alloc_arenas(csize, dyn_bytes);
        emu_thread* th = (emu_thread*)map_or_fail(csize * nthreads * sizeof(emu_thread), "thread records");
        race_threads(th, csize * nthreads);
        emu_block* bs = (emu_block*)map_or_fail(csize * sizeof(emu_block), "block records");
        g_clusters = (emu_cluster*)map_or_fail(sizeof(emu_cluster), "cluster record");
        order ord(nclusters);
        for (unsigned long long k = 0; k < nclusters; ++k) {
            unsigned long long ci = ord(k);
            unsigned kx = (unsigned)(ci % ncx), ky = (unsigned)((ci / ncx) % ncy), kz = (unsigned)(ci / ((unsigned long long)ncx * ncy));
            emu_cluster* c = g_clusters;
            c->n = csize;
            c->expected = csize * (unsigned)nthreads;
            c->arrived = 0;
            c->phase = 0;
            reset_copies();
            for (unsigned r = 0; r < csize; ++r) {
                uint3 idx;
                idx.x = kx * cluster[0] + r % cluster[0];
                idx.y = ky * cluster[1] + (r / cluster[0]) % cluster[1];
                idx.z = kz * cluster[2] + r / (cluster[0] * cluster[1]);
                init_block(&bs[r], idx, th + r * nthreads, r * nthreads, r);
                bs[r].crank = r;
                bs[r].cl = c;
                c->blocks[r] = &bs[r];
            }
            run_group(bs, csize);
        }
    } else {
        if (nblocks * nthreads > max_coop_threads) {
            snprintf(g_st->msg, sizeof g_st->msg,
                     "cooperative launch of %llu blocks x %lu threads exceeds the %llu threads that can be co-resident; "
                     "size the grid from sm_count",
                     nblocks, nthreads, max_coop_threads);
            g_st->code = 1;
            _exit(3);
        }
        alloc_stacks(nblocks * nthreads);
        alloc_arenas(nblocks, dyn_bytes);
        emu_thread* th = (emu_thread*)map_or_fail(nblocks * nthreads * sizeof(emu_thread), "thread records");
        race_threads(th, nblocks * nthreads);
        emu_block* bs = (emu_block*)map_or_fail(nblocks * sizeof(emu_block), "block records");
        g_clusters = (emu_cluster*)map_or_fail(nblocks * sizeof(emu_cluster), "cluster records");
        reset_copies();
        for (unsigned long long k = 0; k < nblocks; ++k) {
            init_block(&bs[k], block_index(k), th + k * nthreads, k * nthreads, k);
            emu_cluster* c = &g_clusters[k];  // each block is a cluster of one
            c->n = 1;
            c->expected = (unsigned)nthreads;
            c->arrived = 0;
            c->phase = 0;
            c->blocks[0] = &bs[k];
            bs[k].cl = c;
        }
        run_group(bs, nblocks);
    }
    g_st->seconds = now_s() - t0;
    g_st->switches = g_switches;
    g_st->code = 0;
    fflush(stdout);  // a kernel's printf output
    _exit(0);
}

}  // namespace

// ------------------------------------------------------------------ device-side API

extern "C" {

EMU_HIDDEN void emu_fail(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = 0;
    if (emu_cur && g_in_fiber) {
        char tb[48], bb[48];
        fmt_idx(tb, sizeof tb, emu_cur->tid);
        fmt_idx(bb, sizeof bb, emu_cur->blk->idx);
        k = snprintf(g_st->msg, sizeof g_st->msg, "block %s thread %s: ", bb, tb);
    }
    vsnprintf(g_st->msg + k, sizeof g_st->msg - k, fmt, ap);
    va_end(ap);
    note_thread();
    g_st->code = 1;
    _exit(3);
}

EMU_HIDDEN void emu_syncthreads(const char* what) {
    emu_thread* t = emu_cur;
    t->what = what;
    t->wop = EMU_BAR_PLAIN;
    t->bar_pred = 0;
    t->state = EMU_AT_BAR;
    t->blk->n_bar++;
    yield_fiber(t);
}

EMU_HIDDEN int emu_syncthreads_pred(int kind, int pred, const char* what) {
    emu_thread* t = emu_cur;
    t->what = what;
    t->wop = kind;
    t->bar_pred = pred != 0;
    t->state = EMU_AT_BAR;
    t->blk->n_bar++;
    yield_fiber(t);
    int count = t->blk->bar_result;
    switch (kind) {
        case EMU_BAR_COUNT: return count;
        case EMU_BAR_AND: return count == (int)t->blk->n;
        case EMU_BAR_OR: return count != 0;
        default: return 0;
    }
}

EMU_HIDDEN unsigned long long emu_warp_op(int op, unsigned mask, unsigned long long val, unsigned src, const char* what) {
    emu_thread* t = emu_cur;
    if (!(mask >> t->lane & 1))
        emu_fail("%s with mask 0x%08x, which does not name the calling lane %u", what, mask, t->lane);
    t->what = what;
    t->wop = op;
    t->wmask = mask;
    t->wval = val;
    t->wsrc = src;
    t->state = EMU_AT_WARP;
    t->blk->n_warp++;
    yield_fiber(t);
    return t->wres;
}

EMU_HIDDEN void emu_grid_sync(const char* what) {
    emu_thread* t = emu_cur;
    if (!emu_cooperative)
        emu_fail("%s needs a cooperative launch; set cooperative = true in the launch plan", what);
    t->what = what;
    t->state = EMU_AT_GRID;
    t->blk->n_grid++;
    yield_fiber(t);
}

// Place one __shared__ declaration in the per-block arena (called once per
// declaration per launch child; blocks share the layout, not the storage).
// Arrays go downward from the block's base, each at the natural alignment a GPU gives it (at
// least 16 bytes, more when declared __align__): the first array reached ends at the base, so
// an overrun of the last array on a GPU's layout and of the first one here hits the guard page.
EMU_HIDDEN long emu_place_shared(unsigned long size, unsigned long align, const char* name) {
    if (align < kSharedAlign) align = kSharedAlign;
    if (align > g_page) emu_fail("__shared__ %s asks for %lu-byte alignment; the emulator gives at most %lu", name, align, g_page);
    unsigned long used = round_up(g_static_used + size, align);
    if (used > kStaticArena || g_ndecls == kMaxDecls)
        emu_fail("__shared__ declarations need more than %lu bytes (or %d arrays) per block", kStaticArena, kMaxDecls);
    long off = -(long)used;
    // blocks running now: room below their base, and the new array poisoned as at block start
    for (unsigned long long k = 0; k < g_group_n; ++k) {
        emu_block* b = &g_group[k];
        if (b->done) continue;
        make_room(b, used);
        memset(b->static_smem + off, 0xff, used - g_static_used);
    }
    g_decls[g_ndecls++] = emu_decl{off, size, name};
    g_static_used = used;
    if (align > g_static_align) g_static_align = align;
    return off;
}

EMU_HIDDEN unsigned emu_active_mask(void) {
    emu_thread* t = emu_cur;
    emu_block* b = t->blk;
    unsigned lo = t->warp * 32, m = 0;
    for (unsigned j = lo; j < lo + 32 && j < b->n; ++j)
        if (b->threads[j].state != EMU_EXITED) m |= 1u << (j - lo);
    return m;
}

EMU_HIDDEN void emu_warp_collective(emu_collective_fn fn, void* arg, unsigned mask, const char* what) {
    emu_cur->wfn = fn;
    emu_warp_op(EMU_OP_COLLECTIVE, mask, (unsigned long long)(uintptr_t)arg, 0, what);
}

EMU_HIDDEN void emu_wait_until(emu_wait_pred pred, void* arg, const char* what) {
    if (pred(arg)) return;
    emu_thread* t = emu_cur;
    t->wpred = pred;
    t->warg = arg;
    t->what = what;
    t->state = EMU_AT_WAIT;
    t->blk->n_wait++;
    yield_fiber(t);
}

EMU_HIDDEN int emu_in_shared(const void* p, unsigned long n) {
    const char* q = (const char*)p;
    emu_block* b = emu_cur->blk;
    if (q >= b->static_smem - g_static_used && q + n <= b->static_smem) return 1;
    return g_dyn_bytes && q >= b->dyn_smem && q + n <= b->dyn_smem + g_dyn_bytes;
}

// ---- asynchronous copies

}  // extern "C"

namespace {
int copy_new(void* dst, const void* src, unsigned long n, unsigned long zfill, unsigned batch, int tx, const char* what) {
    int i;
    if (g_copy_free >= 0) {
        i = g_copy_free;
        g_copy_free = g_copies[i].next;
    } else if (g_copy_used < kCopies) {
        i = g_copy_used++;
    } else {
        emu_fail("%s: more than %d asynchronous copies are in flight in this launch (are they ever waited for?)", what, kCopies);
    }
    if (zfill > n) emu_fail("%s: zero-fill of %lu bytes exceeds the copy's %lu", what, zfill, n);
    emu_copy* c = &g_copies[i];
    c->dst = (char*)dst;
    c->src = (const char*)src;
    c->n = n;
    c->zfill = zfill;
    c->batch = batch;
    c->tx = tx;
    c->next = -1;
    // in flight: the destination holds nothing a reader may rely on until the wait
    memset(dst, 0xff, n);
    return i;
}
void list_push(int* first, int* last, int i) {
    if (*last >= 0) g_copies[*last].next = i;
    else *first = i;
    *last = i;
}
void copy_do(const emu_copy* c) {
    if (c->n > c->zfill) memmove(c->dst, c->src, c->n - c->zfill);
    if (c->zfill) memset(c->dst + (c->n - c->zfill), 0, c->zfill);
}
void copy_release(int i) {
    g_copies[i].next = g_copy_free;
    g_copy_free = i;
}
// Perform, in issue order, the copies at the head of a list whose batch is below `limit`.
void list_complete(int* first, int* last, unsigned limit) {
    while (*first >= 0 && g_copies[*first].batch < limit) {
        int i = *first;
        copy_do(&g_copies[i]);
        *first = g_copies[i].next;
        copy_release(i);
    }
    if (*first < 0) *last = -1;
}
void copies_free(int first) {
    while (first >= 0) {
        int nx = g_copies[first].next;
        copy_release(first);
        first = nx;
    }
}
int count_list(int first) {
    int k = 0;
    for (; first >= 0; first = g_copies[first].next) ++k;
    return k;
}
}  // namespace

extern "C" {

EMU_HIDDEN void emu_async_issue(void* dst, const void* src, unsigned long n, unsigned long zfill, const char* what) {
    emu_thread* t = emu_cur;
    if (!n) return;
    list_push(&t->aq_first, &t->aq_last, copy_new(dst, src, n, zfill, t->a_committed, 0, what));
}
EMU_HIDDEN void emu_async_commit(void) { emu_cur->a_committed++; }
EMU_HIDDEN void emu_async_wait_prior(unsigned long n) {
    emu_thread* t = emu_cur;
    unsigned limit = t->a_committed >= n ? t->a_committed - (unsigned)n : 0u;
    list_complete(&t->aq_first, &t->aq_last, limit);
}
EMU_HIDDEN void emu_bulk_issue(void* dst, const void* src, unsigned long n, const char* what) {
    emu_thread* t = emu_cur;
    if (!n) return;
    list_push(&t->bq_first, &t->bq_last, copy_new(dst, src, n, 0, t->b_committed, 0, what));
}
EMU_HIDDEN void emu_bulk_commit(void) { emu_cur->b_committed++; }
EMU_HIDDEN void emu_bulk_wait_prior(unsigned long n) {
    emu_thread* t = emu_cur;
    unsigned limit = t->b_committed >= n ? t->b_committed - (unsigned)n : 0u;
    list_complete(&t->bq_first, &t->bq_last, limit);
}
EMU_HIDDEN void emu_copy_attach(int* first, int* last, void* dst, const void* src, unsigned long n, int tx, const char* what) {
    if (!n) return;
    list_push(first, last, copy_new(dst, src, n, 0, 0, tx, what));
}
EMU_HIDDEN long long emu_copy_flush(int* first, int* last) {
    long long txb = 0;
    while (*first >= 0) {
        int i = *first;
        copy_do(&g_copies[i]);
        if (g_copies[i].tx) txb += (long long)g_copies[i].n;
        *first = g_copies[i].next;
        copy_release(i);
    }
    *last = -1;
    return txb;
}

// Append one list to another (a barrier phase's copies become due at its waits); returns the
// transaction bytes the moved copies count.
EMU_HIDDEN long long emu_copy_move(int* first, int* last, int* to_first, int* to_last) {
    long long txb = 0;
    for (int i = *first; i >= 0; i = g_copies[i].next)
        if (g_copies[i].tx) txb += (long long)g_copies[i].n;
    if (*first >= 0) {
        if (*to_last >= 0) g_copies[*to_last].next = *first;
        else *to_first = *first;
        *to_last = *last;
    }
    *first = *last = -1;
    return txb;
}

// ---- clusters

EMU_HIDDEN unsigned long long emu_cluster_arrive(const char*) {
    emu_cluster* c = emu_cur->blk->cl;
    unsigned long long ph = c->phase;
    if (++c->arrived == c->expected) {
        c->arrived = 0;
        c->phase++;
        c->rtime = race_tick();
    }
    return ph;
}
static int cluster_phase_moved(void* arg) {
    emu_thread* t = (emu_thread*)arg;
    return t->blk->cl->phase != t->wval;
}
EMU_HIDDEN void emu_cluster_wait(unsigned long long token, const char* what) {
    emu_thread* t = emu_cur;
    t->wval = token;
    emu_wait_until(cluster_phase_moved, t, what);
    unsigned long long r = t->blk->cl->rtime;  // the cluster barrier orders every block's shared memory
    if (r > t->rfloor) t->rfloor = r;
    if (r > t->rcfloor) t->rcfloor = r;
}

EMU_HIDDEN unsigned long long emu_race_release(void) { return race_tick(); }
EMU_HIDDEN void emu_race_acquire(unsigned long long r) {
    if (r > emu_cur->rfloor) emu_cur->rfloor = r;
}

// The calls g++ -fsanitize=thread puts before every load and store (no ThreadSanitizer runtime
// is linked: these are the whole of it), and the few others it emits.
#define EMU_TSAN_RW(N)                                                                                        \
    EMU_HIDDEN void __tsan_read##N(void* p) { race_access(p, N, 0, (uintptr_t)__builtin_return_address(0)); }  \
    EMU_HIDDEN void __tsan_write##N(void* p) { race_access(p, N, 1, (uintptr_t)__builtin_return_address(0)); } \
    EMU_HIDDEN void __tsan_unaligned_read##N(void* p) { race_access(p, N, 0, (uintptr_t)__builtin_return_address(0)); } \
    EMU_HIDDEN void __tsan_unaligned_write##N(void* p) { race_access(p, N, 1, (uintptr_t)__builtin_return_address(0)); }
EMU_TSAN_RW(1)
EMU_TSAN_RW(2)
EMU_TSAN_RW(4)
EMU_TSAN_RW(8)
EMU_TSAN_RW(16)
#undef EMU_TSAN_RW
EMU_HIDDEN void __tsan_read_range(void* p, unsigned long n) { race_access(p, n, 0, (uintptr_t)__builtin_return_address(0)); }
EMU_HIDDEN void __tsan_write_range(void* p, unsigned long n) { race_access(p, n, 1, (uintptr_t)__builtin_return_address(0)); }
EMU_HIDDEN void __tsan_init(void) {}
EMU_HIDDEN void __tsan_func_entry(void*) {}
EMU_HIDDEN void __tsan_func_exit(void) {}
EMU_HIDDEN void __tsan_vptr_update(void**, void*) {}
EMU_HIDDEN void __tsan_vptr_read(void**) {}
EMU_HIDDEN void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
EMU_HIDDEN void __tsan_atomic_signal_fence(int) {}
static int smem_owner(emu_cluster* c, const char* q, long* off, int* dyn) {
    for (unsigned r = 0; r < c->n; ++r) {
        emu_block* o = c->blocks[r];
        if (q >= arena_static(o->slot) && q < arena_static_hi(o->slot)) { *off = q - o->static_smem; *dyn = 0; return (int)r; }
        if (g_dyn_bytes && q >= o->dyn_smem && q < o->dyn_smem + g_dyn_bytes) { *off = q - o->dyn_smem; *dyn = 1; return (int)r; }
    }
    return -1;
}
EMU_HIDDEN void* emu_cluster_map(const void* p, unsigned rank) {
    emu_cluster* c = emu_cur->blk->cl;
    if (rank >= c->n) emu_fail("map_shared_rank(..., %u) in a cluster of %u blocks", rank, c->n);
    long off;
    int dyn;
    if (smem_owner(c, (const char*)p, &off, &dyn) < 0)
        emu_fail("map_shared_rank(%p, %u): the address is not in the shared memory of a block of this cluster", p, rank);
    emu_block* o = c->blocks[rank];
    return (dyn ? o->dyn_smem : o->static_smem) + off;
}
EMU_HIDDEN int emu_cluster_query(const void* p) {
    long off;
    int dyn;
    int r = smem_owner(emu_cur->blk->cl, (const char*)p, &off, &dyn);
    if (r < 0) emu_fail("query_shared_rank(%p): the address is not in the shared memory of a block of this cluster", p);
    return r;
}

// Run one launch in a forked child. Returns 0 when the kernel completed; else
// the details are in *st (code 1 error, 2 signal, 3 timeout) and the return
// value is the raw wait status (or -1 when fork failed).
EMU_EXPORT int emu_launch(void (*entry)(void**), void** args, const unsigned* grid, const unsigned* block,
                          const unsigned* cluster, unsigned long long dyn_bytes, int cooperative,
                          unsigned long long max_coop_threads, double timeout_s, emu_status* st) {
    memset(st, 0, sizeof *st);
    st->code = -1;
    g_st = st;
    g_entry = entry;
    g_args = args;
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(st->msg, sizeof st->msg, "emulator: fork failed (errno %d)", errno);
        st->code = 1;
        return -1;
    }
    if (pid == 0) child_main(grid, block, cluster, dyn_bytes, cooperative, max_coop_threads, timeout_s);
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && st->code == 0) return 0;
    return ws ? ws : 1;
}

}  // extern "C"
