// SparkTrace CPU emulator: the CUDA device API a kernel sees, in plain C++.
//
// Force-included (g++ -include cuda_emu.h) before a candidate's .cu text,
// which plugins/gate/emulate.py has already rewritten (__shared__ declarations,
// extern __shared__ arrays). Checks logic, not speed and not the GPU memory
// model: every thread is a fiber, switched only at sync points.
#pragma once
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "emu_abi.h"

#define __SPARKTRACE_EMU__ 1
#ifndef __CUDACC__
#define __CUDACC__ 1
#endif
#ifndef __CUDA_ARCH__
#define __CUDA_ARCH__ 900
#endif

#define __global__
#define __device__
#define __host__
#define __managed__
#define __constant__ static
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __cluster_dims__(...)  // the cluster shape reaches the emulator from the launch (emulate.py reads it)
#define __maxnreg__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __grid_constant__
// Declarations that emulate.py could not rewrite (file scope) fall back to static.
#define __shared__ static

// ---------------------------------------------------------------- built-in variables
#define threadIdx (emu_cur->tid)
#define blockIdx (emu_cur->blk->idx)
#define blockDim emu_block_dim
#define gridDim emu_grid_dim
static constexpr int warpSize = 32;

// ---------------------------------------------------------------- vector types
#define EMU_VEC1(T, N, A)                                          \
    struct __attribute__((aligned(A))) N##1 { T x; };              \
    static inline N##1 make_##N##1(T x) { N##1 r; r.x = x; return r; }
#define EMU_VEC2(T, N, A)                                                     \
    struct __attribute__((aligned(A))) N##2 { T x, y; };                      \
    static inline N##2 make_##N##2(T x, T y) { N##2 r; r.x = x; r.y = y; return r; }
#define EMU_VEC3(T, N)                                                                    \
    struct N##3 { T x, y, z; };                                                           \
    static inline N##3 make_##N##3(T x, T y, T z) { N##3 r; r.x = x; r.y = y; r.z = z; return r; }
#define EMU_VEC4(T, N, A)                                                                         \
    struct __attribute__((aligned(A))) N##4 { T x, y, z, w; };                                    \
    static inline N##4 make_##N##4(T x, T y, T z, T w) { N##4 r; r.x = x; r.y = y; r.z = z; r.w = w; return r; }

EMU_VEC1(float, float, 4)
EMU_VEC2(float, float, 8)
EMU_VEC3(float, float)
EMU_VEC4(float, float, 16)
EMU_VEC1(int, int, 4)
EMU_VEC2(int, int, 8)
EMU_VEC3(int, int)
EMU_VEC4(int, int, 16)
EMU_VEC1(unsigned int, uint, 4)
EMU_VEC2(unsigned int, uint, 8)
static inline uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) { uint3 r; r.x = x; r.y = y; r.z = z; return r; }
EMU_VEC4(unsigned int, uint, 16)
EMU_VEC2(signed char, char, 2)
EMU_VEC4(signed char, char, 4)
EMU_VEC2(unsigned char, uchar, 2)
EMU_VEC4(unsigned char, uchar, 4)
EMU_VEC2(short, short, 4)
EMU_VEC4(short, short, 8)
EMU_VEC2(unsigned short, ushort, 4)
EMU_VEC4(unsigned short, ushort, 8)
EMU_VEC2(double, double, 16)
EMU_VEC2(long long, longlong, 16)
EMU_VEC2(unsigned long long, ulonglong, 16)
static_assert(sizeof(float4) == 16 && alignof(float4) == 16, "float4 layout");
static_assert(sizeof(float2) == 8 && alignof(float2) == 8, "float2 layout");
static_assert(sizeof(uchar4) == 4 && alignof(uchar4) == 4, "uchar4 layout");
static_assert(sizeof(float3) == 12 && alignof(float3) == 4, "float3 layout");

// ---------------------------------------------------------------- shared memory
// A function-scope `__shared__ T name[...]` becomes `auto& name = emu_block_shared<T[...], id, align>("name")`:
// per-block storage (cooperative launches run every block at once), poisoned with
// 0xff bytes at block start, so a read before any write sees NaN / all ones. The
// arrays lie below the block's base, so the first one reached ends at a guard page.
template <class T, int ID, unsigned long ALIGN>
static inline __attribute__((always_inline)) T& emu_block_shared(const char* name) {
    constexpr unsigned long a = alignof(T) > ALIGN ? alignof(T) : ALIGN;
    static long off;  // offset below the block's base (negative; 0 until placed); per declaration and template instance
    if (__builtin_expect(!off, 0)) off = emu_place_shared(sizeof(T), a, name);
    return *reinterpret_cast<T*>(emu_cur->blk->static_smem + off);
}
static inline __attribute__((always_inline)) char* emu_dyn_smem() { return emu_cur->blk->dyn_smem; }

// ---------------------------------------------------------------- barriers and fences
static inline void __syncthreads() { emu_syncthreads("__syncthreads"); }
static inline int __syncthreads_count(int p) { return emu_syncthreads_pred(EMU_BAR_COUNT, p, "__syncthreads_count"); }
static inline int __syncthreads_and(int p) { return emu_syncthreads_pred(EMU_BAR_AND, p, "__syncthreads_and"); }
static inline int __syncthreads_or(int p) { return emu_syncthreads_pred(EMU_BAR_OR, p, "__syncthreads_or"); }
static inline void __syncwarp(unsigned mask = 0xffffffffu) { emu_warp_op(EMU_OP_SYNCWARP, mask, 0, 0, "__syncwarp"); }
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline unsigned __activemask() { return emu_active_mask(); }
static inline void __nanosleep(unsigned) {}
[[noreturn]] static inline void __trap() { emu_fail("__trap() called"); }

// ---------------------------------------------------------------- warp shuffles and votes
template <class T>
static inline unsigned long long emu_bits(T v) {
    static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
    unsigned long long b = 0;
    memcpy(&b, &v, sizeof(T));
    return b;
}
template <class T>
static inline T emu_from_bits(unsigned long long b) {
    T v;
    memcpy(&v, &b, sizeof(T));
    return v;
}
static inline unsigned emu_segment(int width, const char* what) {
    if (width < 1 || width > 32 || (width & (width - 1)))
        emu_fail("%s with width %d; width must be a power of two from 1 to 32", what, width);
    return emu_cur->lane & ~(unsigned)(width - 1);
}
template <class T>
static inline T __shfl_sync(unsigned mask, T var, int src, int width = 32) {
    unsigned seg = emu_segment(width, "__shfl_sync");
    unsigned s = seg + ((unsigned)src & (unsigned)(width - 1));
    return emu_from_bits<T>(emu_warp_op(EMU_OP_SHFL, mask, emu_bits(var), s, "__shfl_sync"));
}
template <class T>
static inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {
    unsigned seg = emu_segment(width, "__shfl_up_sync");
    unsigned lane = emu_cur->lane;
    unsigned s = (lane - seg >= delta) ? lane - delta : lane;
    return emu_from_bits<T>(emu_warp_op(EMU_OP_SHFL, mask, emu_bits(var), s, "__shfl_up_sync"));
}
template <class T>
static inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) {
    unsigned seg = emu_segment(width, "__shfl_down_sync");
    unsigned lane = emu_cur->lane;
    unsigned s = (lane - seg + delta < (unsigned)width) ? lane + delta : lane;
    return emu_from_bits<T>(emu_warp_op(EMU_OP_SHFL, mask, emu_bits(var), s, "__shfl_down_sync"));
}
template <class T>
static inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32) {
    unsigned seg = emu_segment(width, "__shfl_xor_sync");
    unsigned lane = emu_cur->lane;
    unsigned s = lane ^ (unsigned)lane_mask;
    if ((s & ~(unsigned)(width - 1)) != seg || s > 31) s = lane;
    return emu_from_bits<T>(emu_warp_op(EMU_OP_SHFL, mask, emu_bits(var), s, "__shfl_xor_sync"));
}
static inline unsigned __ballot_sync(unsigned mask, int p) { return (unsigned)emu_warp_op(EMU_OP_BALLOT, mask, p != 0, 0, "__ballot_sync"); }
static inline int __any_sync(unsigned mask, int p) { return (int)emu_warp_op(EMU_OP_ANY, mask, p != 0, 0, "__any_sync"); }
static inline int __all_sync(unsigned mask, int p) { return (int)emu_warp_op(EMU_OP_ALL, mask, p != 0, 0, "__all_sync"); }
template <class T>
static inline unsigned __match_any_sync(unsigned mask, T v) {
    return (unsigned)emu_warp_op(EMU_OP_MATCH_ANY, mask, emu_bits(v), 0, "__match_any_sync");
}
template <class T>
static inline unsigned __match_all_sync(unsigned mask, T v, int* pred) {
    unsigned r = (unsigned)emu_warp_op(EMU_OP_MATCH_ALL, mask, emu_bits(v), 0, "__match_all_sync");
    *pred = r != 0;
    return r;
}
static inline unsigned __reduce_add_sync(unsigned m, unsigned v) { return (unsigned)emu_warp_op(EMU_OP_RED_ADD_U, m, v, 0, "__reduce_add_sync"); }
static inline int __reduce_add_sync(unsigned m, int v) { return (int)(unsigned)emu_warp_op(EMU_OP_RED_ADD_I, m, (unsigned)v, 0, "__reduce_add_sync"); }
static inline unsigned __reduce_min_sync(unsigned m, unsigned v) { return (unsigned)emu_warp_op(EMU_OP_RED_MIN_U, m, v, 0, "__reduce_min_sync"); }
static inline int __reduce_min_sync(unsigned m, int v) { return (int)(unsigned)emu_warp_op(EMU_OP_RED_MIN_I, m, (unsigned)v, 0, "__reduce_min_sync"); }
static inline unsigned __reduce_max_sync(unsigned m, unsigned v) { return (unsigned)emu_warp_op(EMU_OP_RED_MAX_U, m, v, 0, "__reduce_max_sync"); }
static inline int __reduce_max_sync(unsigned m, int v) { return (int)(unsigned)emu_warp_op(EMU_OP_RED_MAX_I, m, (unsigned)v, 0, "__reduce_max_sync"); }
static inline unsigned __reduce_and_sync(unsigned m, unsigned v) { return (unsigned)emu_warp_op(EMU_OP_RED_AND, m, v, 0, "__reduce_and_sync"); }
static inline unsigned __reduce_or_sync(unsigned m, unsigned v) { return (unsigned)emu_warp_op(EMU_OP_RED_OR, m, v, 0, "__reduce_or_sync"); }
static inline unsigned __reduce_xor_sync(unsigned m, unsigned v) { return (unsigned)emu_warp_op(EMU_OP_RED_XOR, m, v, 0, "__reduce_xor_sync"); }

// ---------------------------------------------------------------- atomics
// Fibers switch only at sync points, so a read-modify-write is atomic as is.
#define EMU_ATOMIC_RMW(NAME, T, EXPR) \
    EMU_NOSAN static inline T NAME(T* p, T v) { T old = *p; *p = (EXPR); return old; }
EMU_ATOMIC_RMW(atomicAdd, int, old + v)
EMU_ATOMIC_RMW(atomicAdd, unsigned int, old + v)
EMU_ATOMIC_RMW(atomicAdd, unsigned long long, old + v)
EMU_ATOMIC_RMW(atomicAdd, float, old + v)
EMU_ATOMIC_RMW(atomicAdd, double, old + v)
EMU_ATOMIC_RMW(atomicSub, int, old - v)
EMU_ATOMIC_RMW(atomicSub, unsigned int, old - v)
EMU_ATOMIC_RMW(atomicExch, int, v)
EMU_ATOMIC_RMW(atomicExch, unsigned int, v)
EMU_ATOMIC_RMW(atomicExch, unsigned long long, v)
EMU_ATOMIC_RMW(atomicExch, float, v)
EMU_ATOMIC_RMW(atomicMin, int, v < old ? v : old)
EMU_ATOMIC_RMW(atomicMin, unsigned int, v < old ? v : old)
EMU_ATOMIC_RMW(atomicMin, long long, v < old ? v : old)
EMU_ATOMIC_RMW(atomicMin, unsigned long long, v < old ? v : old)
EMU_ATOMIC_RMW(atomicMax, int, v > old ? v : old)
EMU_ATOMIC_RMW(atomicMax, unsigned int, v > old ? v : old)
EMU_ATOMIC_RMW(atomicMax, long long, v > old ? v : old)
EMU_ATOMIC_RMW(atomicMax, unsigned long long, v > old ? v : old)
EMU_ATOMIC_RMW(atomicAnd, int, old & v)
EMU_ATOMIC_RMW(atomicAnd, unsigned int, old & v)
EMU_ATOMIC_RMW(atomicAnd, unsigned long long, old & v)
EMU_ATOMIC_RMW(atomicOr, int, old | v)
EMU_ATOMIC_RMW(atomicOr, unsigned int, old | v)
EMU_ATOMIC_RMW(atomicOr, unsigned long long, old | v)
EMU_ATOMIC_RMW(atomicXor, int, old ^ v)
EMU_ATOMIC_RMW(atomicXor, unsigned int, old ^ v)
EMU_ATOMIC_RMW(atomicXor, unsigned long long, old ^ v)
EMU_ATOMIC_RMW(atomicInc, unsigned int, old >= v ? 0u : old + 1u)
EMU_ATOMIC_RMW(atomicDec, unsigned int, (old == 0u || old > v) ? v : old - 1u)
#undef EMU_ATOMIC_RMW
#define EMU_ATOMIC_CAS(T) \
    EMU_NOSAN static inline T atomicCAS(T* p, T cmp, T v) { T old = *p; if (old == cmp) *p = v; return old; }
EMU_ATOMIC_CAS(int)
EMU_ATOMIC_CAS(unsigned int)
EMU_ATOMIC_CAS(unsigned long long)
EMU_ATOMIC_CAS(unsigned short)
#undef EMU_ATOMIC_CAS

// ---------------------------------------------------------------- cache-hinted loads and stores
#define EMU_LOAD(NAME) template <class T> static inline T NAME(const T* p) { return *p; }
EMU_LOAD(__ldg) EMU_LOAD(__ldcg) EMU_LOAD(__ldca) EMU_LOAD(__ldcs) EMU_LOAD(__ldlu) EMU_LOAD(__ldcv)
#undef EMU_LOAD
#define EMU_STORE(NAME) template <class T> static inline void NAME(T* p, T v) { *p = v; }
EMU_STORE(__stcg) EMU_STORE(__stcs) EMU_STORE(__stwb) EMU_STORE(__stwt)
#undef EMU_STORE

// ---------------------------------------------------------------- bit reinterpretation and integer intrinsics
static inline unsigned int __float_as_uint(float x) { unsigned int r; memcpy(&r, &x, 4); return r; }
static inline int __float_as_int(float x) { int r; memcpy(&r, &x, 4); return r; }
static inline float __uint_as_float(unsigned int x) { float r; memcpy(&r, &x, 4); return r; }
static inline float __int_as_float(int x) { float r; memcpy(&r, &x, 4); return r; }
static inline long long __double_as_longlong(double x) { long long r; memcpy(&r, &x, 8); return r; }
static inline double __longlong_as_double(long long x) { double r; memcpy(&r, &x, 8); return r; }
static inline int __popc(unsigned int x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned int __brev(unsigned int x) {
    unsigned int r = 0;
    for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned int __umulhi(unsigned int a, unsigned int b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline int __mul24(int a, int b) { return (int)((long long)((a << 8) >> 8) * ((b << 8) >> 8)); }
static inline unsigned int __umul24(unsigned int a, unsigned int b) { return (a & 0xffffffu) * (b & 0xffffffu); }

// ---------------------------------------------------------------- math
// glibc declares __expf and friends itself, so the fast-math spellings are macros.
#define __expf(x) expf(x)
#define __exp10f(x) powf(10.0f, (x))
#define __logf(x) logf(x)
#define __log2f(x) log2f(x)
#define __log10f(x) log10f(x)
#define __sinf(x) sinf(x)
#define __cosf(x) cosf(x)
#define __tanf(x) tanf(x)
#define __powf(x, y) powf((x), (y))
static inline float __fdividef(float a, float b) { return a / b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline float __fsqrt_rn(float x) { return sqrtf(x); }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
static inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
static inline float __saturatef(float x) { return x > 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }
static inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
static inline int __float2int_rz(float x) { return (int)x; }
static inline int __float2int_rd(float x) { return (int)floorf(x); }
static inline int __float2int_ru(float x) { return (int)ceilf(x); }
static inline unsigned int __float2uint_rn(float x) { return (unsigned int)nearbyintf(x); }
static inline unsigned int __float2uint_rz(float x) { return (unsigned int)x; }
static inline float __int2float_rn(int x) { return (float)x; }
static inline float __uint2float_rn(unsigned int x) { return (float)x; }
static inline long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
static inline float __ll2float_rn(long long x) { return (float)x; }

// min/max as CUDA overloads them (mixed signedness promotes to unsigned)
#define EMU_MINMAX(T)                                              \
    static inline T min(T a, T b) { return b < a ? b : a; }        \
    static inline T max(T a, T b) { return a < b ? b : a; }
EMU_MINMAX(int)
EMU_MINMAX(unsigned int)
EMU_MINMAX(long)
EMU_MINMAX(unsigned long)
EMU_MINMAX(long long)
EMU_MINMAX(unsigned long long)
#undef EMU_MINMAX
static inline unsigned int min(int a, unsigned int b) { return min((unsigned int)a, b); }
static inline unsigned int min(unsigned int a, int b) { return min(a, (unsigned int)b); }
static inline unsigned int max(int a, unsigned int b) { return max((unsigned int)a, b); }
static inline unsigned int max(unsigned int a, int b) { return max(a, (unsigned int)b); }
static inline long long min(long long a, int b) { return min(a, (long long)b); }
static inline long long min(int a, long long b) { return min((long long)a, b); }
static inline long long max(long long a, int b) { return max(a, (long long)b); }
static inline long long max(int a, long long b) { return max((long long)a, b); }
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }

// ---------------------------------------------------------------- byte permute
// __byte_perm compiles to PRMT. The documentation reads 3 bits per selector
// nibble; PRMT's generic mode replicates the byte's sign when the 4th is set.
// The two disagree, so a selector that sets it is refused rather than guessed.
static inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
    if (s & 0x8888u)
        emu_fail("__byte_perm selector 0x%04x sets bit 3 of a nibble (PRMT would replicate the byte's sign, "
                 "the documentation ignores it); use byte selectors 0-7", s & 0xffffu);
    unsigned long long v = ((unsigned long long)y << 32) | x;
    unsigned r = 0;
    for (int n = 0; n < 4; ++n) r |= (unsigned)((v >> (8 * ((s >> (4 * n)) & 7u))) & 0xffu) << (8 * n);
    return r;
}
