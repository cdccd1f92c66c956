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

// per-block shared memory arenas: [dyn pages][guard][static arena][guard]
char* g_arenas = nullptr;
unsigned long g_narenas = 0;
unsigned long g_arena_slot = 0;
unsigned long g_dyn_pages = 0;
unsigned long long g_dyn_bytes = 0;

unsigned long g_static_used = 0;

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

void fiber_main(void) {
    g_entry(g_args);
    emu_thread* t = emu_cur;
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

void alloc_arenas(unsigned long n, unsigned long long dyn_bytes) {
    g_dyn_bytes = dyn_bytes;
    g_dyn_pages = (dyn_bytes + g_page - 1) / g_page;
    g_arena_slot = (g_dyn_pages + 1) * g_page + kStaticArena + g_page;
    g_narenas = n;
    g_arenas = (char*)map_or_fail(n * g_arena_slot, "shared memory");
    for (unsigned long i = 0; i < n; ++i) {
        char* a = g_arenas + i * g_arena_slot;
        mprotect(a + g_dyn_pages * g_page, g_page, PROT_NONE);
        mprotect(a + (g_dyn_pages + 1) * g_page + kStaticArena, g_page, PROT_NONE);
        memset(a + (g_dyn_pages + 1) * g_page, 0xff, kStaticArena);
    }
}

char* arena_dyn(unsigned long i) {
    // the dynamic region ends where the guard page begins (16-byte aligned start)
    unsigned long long padded = (g_dyn_bytes + 15) & ~15ull;
    return g_arenas + i * g_arena_slot + g_dyn_pages * g_page - padded;
}
char* arena_static(unsigned long i) { return g_arenas + i * g_arena_slot + (g_dyn_pages + 1) * g_page; }

int classify(uint64_t a) {
    if (g_stacks && a >= (uint64_t)g_stacks && a < (uint64_t)g_stacks + g_nstacks * g_stack_slot &&
        (a - (uint64_t)g_stacks) % g_stack_slot < g_page)
        return 1;
    if (g_arenas && a >= (uint64_t)g_arenas && a < (uint64_t)g_arenas + g_narenas * g_arena_slot) {
        uint64_t off = (a - (uint64_t)g_arenas) % g_arena_slot;
        if (off >= g_dyn_pages * g_page && off < (g_dyn_pages + 1) * g_page) return 2;
        if (off >= (g_dyn_pages + 1) * g_page + kStaticArena) return 3;
    }
    return 0;
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
    b->dyn_smem = arena_dyn(arena);
    b->static_smem = arena_static(arena);
    // shared memory starts out as garbage on a GPU: poison it (floats read NaN)
    if (g_dyn_bytes) memset(b->dyn_smem, 0xff, g_dyn_bytes);
    if (g_static_used) memset(b->static_smem, 0xff, g_static_used);
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
        unsigned long slot = first_stack + i;
#ifdef EMU_ASM_SWITCH
        // stagger the stack tops across cache sets: equal page offsets would all
        // land in one L1 set and thrash it at every switch
        t->sp = init_stack(g_stacks + slot * g_stack_slot + g_stack_slot - (slot % 64) * 64);
#else
        init_uctx(t, slot);
#endif
    }
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
    for (unsigned l = 0; l < nl; ++l) {
        if (!(release >> l & 1)) continue;
        emu_thread* t = &th[l];
        unsigned m = t->wmask;
        for (unsigned j = 0; j < nl; ++j)
            if ((m >> j & 1) && th[j].wop != t->wop)
                fail_block(b, "warp %u: lane %u is at %s while lane %u, named in its mask 0x%08x, is at %s",
                           lo / 32, l, op_name(t), j, m, op_name(&th[j]));
    }
    for (unsigned l = 0; l < nl; ++l) {
        if (!(release >> l & 1)) continue;
        emu_thread* t = &th[l];
        unsigned m = t->wmask;
        unsigned long long r = 0;
        switch (t->wop) {
            case EMU_OP_SYNCWARP: break;
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

void run_warp(emu_block* b, unsigned w) {
    unsigned lo = w * 32, hi = lo + 32 < b->n ? lo + 32 : b->n;
    emu_thread* th = b->threads;
    g_warp_hi = hi;
    for (;;) {
        for (unsigned i = lo; i < hi; ++i)
            if (th[i].state == EMU_RUNNABLE) run_fiber(&th[i]);
        if (!b->n_warp || !resolve_warp(b, lo, hi)) return;
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

// Run a block until every thread has exited (returns 0) or waits at grid.sync() (returns 1).
int run_block(emu_block* b) {
    unsigned nw = (b->n + 31) / 32;
    for (;;) {
        for (unsigned w = 0; w < nw; ++w) run_warp(b, w);
        if (b->n_exited == b->n) return 0;
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

[[noreturn]] void child_main(const unsigned* grid, const unsigned* block, unsigned long long dyn_bytes,
                             int cooperative, unsigned long long max_coop_threads, double timeout_s) {
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
    emu_cooperative = cooperative;
    unsigned long long nblocks = (unsigned long long)grid[0] * grid[1] * grid[2];
    unsigned long nthreads = (unsigned long)block[0] * block[1] * block[2];
    order ord(nblocks);
    if (!cooperative) {
        alloc_stacks(nthreads);
        alloc_arenas(1, dyn_bytes);
        emu_thread* th = (emu_thread*)map_or_fail(nthreads * sizeof(emu_thread), "thread records");
        emu_block* b = (emu_block*)map_or_fail(sizeof(emu_block), "block record");
        for (unsigned long long k = 0; k < nblocks; ++k) {
            init_block(b, block_index(ord(k)), th, 0, 0);
            if (run_block(b)) {
                g_in_fiber = 0;
                fail_block(b, "grid.sync() needs a cooperative launch; set cooperative = true in the launch plan");
            }
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
        emu_block* bs = (emu_block*)map_or_fail(nblocks * sizeof(emu_block), "block records");
        for (unsigned long long k = 0; k < nblocks; ++k)
            init_block(&bs[k], block_index(k), th + k * nthreads, k * nthreads, k);
        for (;;) {
            unsigned long long waiting = 0, done = 0;
            for (unsigned long long k = 0; k < nblocks; ++k) {
                emu_block* b = &bs[ord(k)];
                if (b->done) { ++done; continue; }
                if (run_block(b)) ++waiting;
                else { b->done = 1; ++done; }
            }
            if (!waiting) break;
            if (done) {
                snprintf(g_st->msg, sizeof g_st->msg,
                         "%llu blocks wait at grid.sync() while %llu blocks have exited; grid.sync() must be reached by every thread",
                         waiting, done);
                g_st->code = 1;
                _exit(3);
            }
            for (unsigned long long k = 0; k < nblocks; ++k) {
                emu_block* b = &bs[k];
                for (unsigned i = 0; i < b->n; ++i) b->threads[i].state = EMU_RUNNABLE;
                b->n_grid = 0;
            }
        }
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
EMU_HIDDEN unsigned long emu_place_shared(unsigned long size, unsigned long align) {
    unsigned long off = (g_static_used + align - 1) / align * align;
    if (off + size > kStaticArena)
        emu_fail("__shared__ declarations need more than %lu bytes per block", kStaticArena);
    g_static_used = off + size;
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

// Run one launch in a forked child. Returns 0 when the kernel completed; else
// the details are in *st (code 1 error, 2 signal, 3 timeout) and the return
// value is the raw wait status (or -1 when fork failed).
EMU_EXPORT int emu_launch(void (*entry)(void**), void** args, const unsigned* grid, const unsigned* block,
                          unsigned long long dyn_bytes, int cooperative, unsigned long long max_coop_threads,
                          double timeout_s, emu_status* st) {
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
    if (pid == 0) child_main(grid, block, dyn_bytes, cooperative, max_coop_threads, timeout_s);
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && st->code == 0) return 0;
    return ws ? ws : 1;
}

}  // extern "C"
