// SparkTrace CPU emulator: half, bfloat16 and fp8 (e4m3, e5m2) as cuda_fp16.h,
// cuda_bf16.h and cuda_fp8.h declare them, exact to the bit.
//
// Every conversion rounds once, to nearest with ties to even (or toward zero
// for the _rz spellings), with subnormals kept, as the GPU's cvt instructions
// do. Arithmetic (__hadd, __hmul, __hfma and the x2 forms) rounds the exact
// result once: products of two 11- or 8-bit significands are exact in double,
// and sums carry their rounding error along (two-sum), so a double rounding
// can never land on a tie the exact value would not. NaN results are the
// canonical NaNs the GPU writes (0x7FFF, 0x7F).
#pragma once
#include "cuda_emu.h"

// ---------------------------------------------------------------- the one rounding routine
// Formats: E exponent bits, M mantissa bits; fn = "finite" e4m3 (no infinity,
// only S.1111.111 is NaN, largest finite S.1111.110 = 448).
struct emu_minifloat {
    int E, M, fn;
};
static constexpr emu_minifloat EMU_F16 = {5, 10, 0};
static constexpr emu_minifloat EMU_BF16 = {8, 7, 0};
static constexpr emu_minifloat EMU_E4M3 = {4, 3, 1};
static constexpr emu_minifloat EMU_E5M2 = {5, 2, 0};

enum { EMU_RN = 0, EMU_RZ = 1 };

static inline unsigned emu_mf_nan(emu_minifloat f) { return f.fn ? 0x7Fu : ((1u << (f.E + f.M)) - 1u); }
static inline unsigned emu_mf_inf(emu_minifloat f) { return ((1u << f.E) - 1u) << f.M; }
static inline unsigned emu_mf_max(emu_minifloat f) { return f.fn ? (((1u << f.E) << f.M) - 2u) : emu_mf_inf(f) - 1u; }

// Round x + err (err: the exact remainder of an earlier operation, |err| below
// half an ulp of x in double; 0 when x is exact) to format f. sat: overflow
// (and infinity) goes to the largest finite value instead of inf/NaN.
static inline unsigned emu_round_mf(double x, double err, emu_minifloat f, int mode, int sat) {
    if (x != x) return emu_mf_nan(f);
    const unsigned sign = signbit(x) ? 1u << (f.E + f.M) : 0u;
    double a = fabs(x);
    const int bias = (1 << (f.E - 1)) - 1, emin = 1 - bias;
    if (a == 0.0) return sign;
    unsigned bits;
    if (isinf(a)) {
        bits = ~0u;
    } else {
        int ex;
        frexp(a, &ex);  // a = m * 2^ex, m in [0.5, 1)
        int q = ex - 1 < emin ? emin : ex - 1;
        if (q - emin > (1 << f.E) + 2) {
            bits = ~0u;  // far beyond the largest exponent
        } else {
            double r = ldexp(a, f.M - q);  // exact: a power-of-two scaling
            double fl = floor(r), frac = r - fl;
            unsigned long long n = (unsigned long long)fl;
            // which side of a tie the exact value lies on, in magnitude
            int dir = err == 0.0 ? 0 : ((err > 0) == (x > 0) ? 1 : -1);
            if (mode == EMU_RZ) {
                if (frac == 0.0 && dir < 0 && n > 0) n -= 1;  // exactly representable minus a bit
            } else if (frac > 0.5 || (frac == 0.5 && (dir > 0 || (dir == 0 && (n & 1))))) {
                n += 1;
            }
            // subnormals, normals and a carry into the next binade all fall out of one formula
            bits = (unsigned)(((unsigned long long)(q - emin) << f.M) + n);
        }
    }
    if (bits > emu_mf_max(f)) {
        if (sat || (mode == EMU_RZ && !isinf(a))) bits = emu_mf_max(f);
        else bits = f.fn ? emu_mf_nan(f) : emu_mf_inf(f);
    }
    return sign | bits;
}

static inline double emu_mf_to_double(unsigned bits, emu_minifloat f) {
    const unsigned mmask = (1u << f.M) - 1u, emask = (1u << f.E) - 1u;
    const unsigned e = (bits >> f.M) & emask, m = bits & mmask;
    const int bias = (1 << (f.E - 1)) - 1;
    const int neg = (bits >> (f.E + f.M)) & 1u;
    double v;
    if (f.fn && e == emask && m == mmask) return neg ? -NAN : NAN;
    if (!f.fn && e == emask) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp((double)m, 1 - bias - f.M);
    else v = ldexp((double)(m | (1u << f.M)), (int)e - bias - f.M);
    return neg ? -v : v;
}

// exact a + b as s + err (Knuth's two-sum; round-to-nearest double arithmetic)
static inline double emu_two_sum(double a, double b, double* err) {
    double s = a + b;
    double bb = s - a;
    *err = (a - (s - bb)) + (b - bb);
    return s;
}
static inline unsigned emu_mf_add(double a, double b, emu_minifloat f) {
    double e, s = emu_two_sum(a, b, &e);
    return emu_round_mf(s, e, f, EMU_RN, 0);
}
static inline unsigned emu_mf_fma(double a, double b, double c, emu_minifloat f) {
    double p = a * b;  // exact: at most 22 significant bits, far from double's range limits
    double e, s = emu_two_sum(p, c, &e);
    return emu_round_mf(s, e, f, EMU_RN, 0);
}
static inline unsigned emu_mf_from_float(float x, emu_minifloat f, int mode = EMU_RN, int sat = 0) {
    return emu_round_mf((double)x, 0.0, f, mode, sat);
}

// ---------------------------------------------------------------- storage types
struct __half_raw { unsigned short x; };
struct __half2_raw { unsigned short x, y; };
struct __nv_bfloat16_raw { unsigned short x; };
struct __nv_bfloat162_raw { unsigned short x, y; };

struct __half;
struct __nv_bfloat16;
static inline __half emu_half_bits(unsigned short b);
static inline __nv_bfloat16 emu_bf16_bits(unsigned short b);

struct __attribute__((aligned(2))) __half {
    unsigned short __x;
    __half() = default;
    __half(const __half_raw& r) : __x(r.x) {}
    __half(float f) : __x((unsigned short)emu_mf_from_float(f, EMU_F16)) {}
    __half(double d) : __x((unsigned short)emu_round_mf(d, 0.0, EMU_F16, EMU_RN, 0)) {}
    __half(int v) : __half((double)v) {}
    __half(unsigned int v) : __half((double)v) {}
    __half(short v) : __half((double)v) {}
    __half(unsigned short v) : __half((double)v) {}
    __half(long long v) : __half((double)v) {}
    __half(unsigned long long v) : __half((double)v) {}
    __half& operator=(const __half_raw& r) { __x = r.x; return *this; }
    __half& operator=(float f) { __x = (unsigned short)emu_mf_from_float(f, EMU_F16); return *this; }
    __half& operator=(double d) { *this = __half(d); return *this; }
    operator float() const { return (float)emu_mf_to_double(__x, EMU_F16); }
    operator __half_raw() const { __half_raw r; r.x = __x; return r; }
};

struct __attribute__((aligned(2))) __nv_bfloat16 {
    unsigned short __x;
    __nv_bfloat16() = default;
    __nv_bfloat16(const __nv_bfloat16_raw& r) : __x(r.x) {}
    __nv_bfloat16(float f) : __x((unsigned short)emu_mf_from_float(f, EMU_BF16)) {}
    __nv_bfloat16(double d) : __x((unsigned short)emu_round_mf(d, 0.0, EMU_BF16, EMU_RN, 0)) {}
    __nv_bfloat16(int v) : __nv_bfloat16((double)v) {}
    __nv_bfloat16(unsigned int v) : __nv_bfloat16((double)v) {}
    __nv_bfloat16(short v) : __nv_bfloat16((double)v) {}
    __nv_bfloat16(unsigned short v) : __nv_bfloat16((double)v) {}
    __nv_bfloat16(long long v) : __nv_bfloat16((double)v) {}
    __nv_bfloat16(unsigned long long v) : __nv_bfloat16((double)v) {}
    __nv_bfloat16& operator=(const __nv_bfloat16_raw& r) { __x = r.x; return *this; }
    __nv_bfloat16& operator=(float f) { __x = (unsigned short)emu_mf_from_float(f, EMU_BF16); return *this; }
    __nv_bfloat16& operator=(double d) { *this = __nv_bfloat16(d); return *this; }
    operator float() const { return (float)emu_mf_to_double(__x, EMU_BF16); }
    operator __nv_bfloat16_raw() const { __nv_bfloat16_raw r; r.x = __x; return r; }
};

struct __attribute__((aligned(4))) __half2 {
    __half x, y;
    __half2() = default;
    __half2(const __half& a, const __half& b) : x(a), y(b) {}
    __half2(const __half2_raw& r) { x.__x = r.x; y.__x = r.y; }
    __half2& operator=(const __half2_raw& r) { x.__x = r.x; y.__x = r.y; return *this; }
    operator __half2_raw() const { __half2_raw r; r.x = x.__x; r.y = y.__x; return r; }
};

struct __attribute__((aligned(4))) __nv_bfloat162 {
    __nv_bfloat16 x, y;
    __nv_bfloat162() = default;
    __nv_bfloat162(const __nv_bfloat16& a, const __nv_bfloat16& b) : x(a), y(b) {}
    __nv_bfloat162(const __nv_bfloat162_raw& r) { x.__x = r.x; y.__x = r.y; }
    __nv_bfloat162& operator=(const __nv_bfloat162_raw& r) { x.__x = r.x; y.__x = r.y; return *this; }
    operator __nv_bfloat162_raw() const { __nv_bfloat162_raw r; r.x = x.__x; r.y = y.__x; return r; }
};

static_assert(sizeof(__half) == 2 && alignof(__half) == 2, "__half layout");
static_assert(sizeof(__half2) == 4 && alignof(__half2) == 4, "__half2 layout");
static_assert(sizeof(__nv_bfloat16) == 2 && sizeof(__nv_bfloat162) == 4 && alignof(__nv_bfloat162) == 4, "bfloat16 layout");

typedef __half half;
typedef __half2 half2;
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

static inline __half emu_half_bits(unsigned short b) { __half h; h.__x = b; return h; }
static inline __nv_bfloat16 emu_bf16_bits(unsigned short b) { __nv_bfloat16 h; h.__x = b; return h; }
static inline double emu_d(__half h) { return emu_mf_to_double(h.__x, EMU_F16); }
static inline double emu_d(__nv_bfloat16 h) { return emu_mf_to_double(h.__x, EMU_BF16); }
static inline __half emu_mk(__half, unsigned b) { return emu_half_bits((unsigned short)b); }
static inline __nv_bfloat16 emu_mk(__nv_bfloat16, unsigned b) { return emu_bf16_bits((unsigned short)b); }
static inline emu_minifloat emu_fmt_of(__half) { return EMU_F16; }
static inline emu_minifloat emu_fmt_of(__nv_bfloat16) { return EMU_BF16; }

// ---------------------------------------------------------------- conversions: half
static inline __half __float2half(float f) { return emu_half_bits((unsigned short)emu_mf_from_float(f, EMU_F16)); }
static inline __half __float2half_rn(float f) { return __float2half(f); }
static inline __half __float2half_rz(float f) { return emu_half_bits((unsigned short)emu_mf_from_float(f, EMU_F16, EMU_RZ)); }
static inline __half __double2half(double d) { return emu_half_bits((unsigned short)emu_round_mf(d, 0.0, EMU_F16, EMU_RN, 0)); }
static inline float __half2float(__half h) { return (float)emu_d(h); }
static inline __half2 __float2half2_rn(float f) { __half h = __float2half(f); return __half2(h, h); }
static inline __half2 __floats2half2_rn(float a, float b) { return __half2(__float2half(a), __float2half(b)); }
static inline __half2 __float22half2_rn(float2 v) { return __floats2half2_rn(v.x, v.y); }
static inline float2 __half22float2(__half2 h) { return make_float2(__half2float(h.x), __half2float(h.y)); }
static inline float __low2float(__half2 h) { return __half2float(h.x); }
static inline float __high2float(__half2 h) { return __half2float(h.y); }
static inline __half __low2half(__half2 h) { return h.x; }
static inline __half __high2half(__half2 h) { return h.y; }
static inline __half2 __halves2half2(__half a, __half b) { return __half2(a, b); }
static inline __half2 __half2half2(__half a) { return __half2(a, a); }
static inline __half2 make_half2(__half a, __half b) { return __half2(a, b); }
static inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
static inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
static inline __half2 __low2half2(__half2 a) { return __half2(a.x, a.x); }
static inline __half2 __high2half2(__half2 a) { return __half2(a.y, a.y); }
static inline __half2 __lowhigh2highlow(__half2 a) { return __half2(a.y, a.x); }
static inline unsigned short __half_as_ushort(__half h) { return h.__x; }
static inline short __half_as_short(__half h) { return (short)h.__x; }
static inline __half __ushort_as_half(unsigned short b) { return emu_half_bits(b); }
static inline __half __short_as_half(short b) { return emu_half_bits((unsigned short)b); }
static inline __half __int2half_rn(int v) { return __half((double)v); }
static inline __half __uint2half_rn(unsigned v) { return __half((double)v); }
static inline int __half2int_rn(__half h) { return (int)nearbyint(emu_d(h)); }
static inline int __half2int_rz(__half h) { return (int)emu_d(h); }

// ---------------------------------------------------------------- conversions: bfloat16
static inline __nv_bfloat16 __float2bfloat16(float f) { return emu_bf16_bits((unsigned short)emu_mf_from_float(f, EMU_BF16)); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __float2bfloat16(f); }
static inline __nv_bfloat16 __float2bfloat16_rz(float f) { return emu_bf16_bits((unsigned short)emu_mf_from_float(f, EMU_BF16, EMU_RZ)); }
static inline __nv_bfloat16 __double2bfloat16(double d) { return emu_bf16_bits((unsigned short)emu_round_mf(d, 0.0, EMU_BF16, EMU_RN, 0)); }
static inline float __bfloat162float(__nv_bfloat16 h) { return (float)emu_d(h); }
static inline __nv_bfloat162 __float2bfloat162_rn(float f) { __nv_bfloat16 h = __float2bfloat16(f); return __nv_bfloat162(h, h); }
static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return __nv_bfloat162(__float2bfloat16(a), __float2bfloat16(b)); }
static inline __nv_bfloat162 __float22bfloat162_rn(float2 v) { return __floats2bfloat162_rn(v.x, v.y); }
static inline float2 __bfloat1622float2(__nv_bfloat162 h) { return make_float2(__bfloat162float(h.x), __bfloat162float(h.y)); }
static inline float __low2float(__nv_bfloat162 h) { return __bfloat162float(h.x); }
static inline float __high2float(__nv_bfloat162 h) { return __bfloat162float(h.y); }
static inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
static inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }
static inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
static inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return __nv_bfloat162(a, a); }
static inline __nv_bfloat162 make_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
static inline __nv_bfloat162 __lows2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x, b.x); }
static inline __nv_bfloat162 __highs2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.y, b.y); }
static inline __nv_bfloat162 __low2bfloat162(__nv_bfloat162 a) { return __nv_bfloat162(a.x, a.x); }
static inline __nv_bfloat162 __high2bfloat162(__nv_bfloat162 a) { return __nv_bfloat162(a.y, a.y); }
static inline __nv_bfloat162 __lowhigh2highlow(__nv_bfloat162 a) { return __nv_bfloat162(a.y, a.x); }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
static inline short __bfloat16_as_short(__nv_bfloat16 h) { return (short)h.__x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) { return emu_bf16_bits(b); }
static inline __nv_bfloat16 __short_as_bfloat16(short b) { return emu_bf16_bits((unsigned short)b); }
static inline __nv_bfloat16 __int2bfloat16_rn(int v) { return __nv_bfloat16((double)v); }
static inline int __bfloat162int_rn(__nv_bfloat16 h) { return (int)nearbyint(emu_d(h)); }
static inline int __bfloat162int_rz(__nv_bfloat16 h) { return (int)emu_d(h); }

// ---------------------------------------------------------------- arithmetic (scalar and x2), both types
#define EMU_LOWP_OPS(H, H2)                                                                                  \
    static inline H __hadd(H a, H b) { return emu_mk(a, emu_mf_add(emu_d(a), emu_d(b), emu_fmt_of(a))); }    \
    static inline H __hsub(H a, H b) { return emu_mk(a, emu_mf_add(emu_d(a), -emu_d(b), emu_fmt_of(a))); }   \
    static inline H __hmul(H a, H b) { return emu_mk(a, emu_mf_fma(emu_d(a), emu_d(b), -0.0, emu_fmt_of(a))); } \
    static inline H __hfma(H a, H b, H c) { return emu_mk(a, emu_mf_fma(emu_d(a), emu_d(b), emu_d(c), emu_fmt_of(a))); } \
    static inline H __hdiv(H a, H b) { return emu_mk(a, emu_round_mf(emu_d(a) / emu_d(b), 0.0, emu_fmt_of(a), EMU_RN, 0)); } \
    static inline H __hadd_rn(H a, H b) { return __hadd(a, b); }                                              \
    static inline H __hsub_rn(H a, H b) { return __hsub(a, b); }                                              \
    static inline H __hmul_rn(H a, H b) { return __hmul(a, b); }                                              \
    static inline H __hneg(H a) { return emu_mk(a, a.__x ^ 0x8000u); }                                       \
    static inline H __habs(H a) { return emu_mk(a, a.__x & 0x7fffu); }                                        \
    static inline H __hfma_relu(H a, H b, H c) { H r = __hfma(a, b, c); return emu_d(r) < 0 ? emu_mk(a, 0) : r; } \
    static inline bool __hisnan(H a) { return emu_d(a) != emu_d(a); }                                         \
    static inline int __hisinf(H a) { double v = emu_d(a); return isinf(v) ? (v > 0 ? 1 : -1) : 0; }         \
    static inline H __hmax(H a, H b) {                                                                        \
        if (__hisnan(a)) return __hisnan(b) ? emu_mk(a, emu_mf_nan(emu_fmt_of(a))) : b;                       \
        if (__hisnan(b)) return a;                                                                            \
        double x = emu_d(a), y = emu_d(b);                                                                    \
        if (x == y) return (a.__x & 0x8000u) ? b : a;                                                         \
        return x > y ? a : b;                                                                                 \
    }                                                                                                         \
    static inline H __hmin(H a, H b) {                                                                        \
        if (__hisnan(a)) return __hisnan(b) ? emu_mk(a, emu_mf_nan(emu_fmt_of(a))) : b;                       \
        if (__hisnan(b)) return a;                                                                            \
        double x = emu_d(a), y = emu_d(b);                                                                    \
        if (x == y) return (a.__x & 0x8000u) ? a : b;                                                         \
        return x < y ? a : b;                                                                                 \
    }                                                                                                         \
    static inline bool __heq(H a, H b) { return emu_d(a) == emu_d(b); }                                       \
    static inline bool __hne(H a, H b) { return emu_d(a) != emu_d(b) && !__hisnan(a) && !__hisnan(b); }       \
    static inline bool __hlt(H a, H b) { return emu_d(a) < emu_d(b); }                                        \
    static inline bool __hle(H a, H b) { return emu_d(a) <= emu_d(b); }                                       \
    static inline bool __hgt(H a, H b) { return emu_d(a) > emu_d(b); }                                        \
    static inline bool __hge(H a, H b) { return emu_d(a) >= emu_d(b); }                                       \
    static inline H2 __hadd2(H2 a, H2 b) { return H2(__hadd(a.x, b.x), __hadd(a.y, b.y)); }                  \
    static inline H2 __hsub2(H2 a, H2 b) { return H2(__hsub(a.x, b.x), __hsub(a.y, b.y)); }                  \
    static inline H2 __hmul2(H2 a, H2 b) { return H2(__hmul(a.x, b.x), __hmul(a.y, b.y)); }                  \
    static inline H2 __h2div(H2 a, H2 b) { return H2(__hdiv(a.x, b.x), __hdiv(a.y, b.y)); }                  \
    static inline H2 __hfma2(H2 a, H2 b, H2 c) { return H2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }  \
    static inline H2 __hfma2_relu(H2 a, H2 b, H2 c) { return H2(__hfma_relu(a.x, b.x, c.x), __hfma_relu(a.y, b.y, c.y)); } \
    static inline H2 __hneg2(H2 a) { return H2(__hneg(a.x), __hneg(a.y)); }                                  \
    static inline H2 __habs2(H2 a) { return H2(__habs(a.x), __habs(a.y)); }                                  \
    static inline H2 __hmax2(H2 a, H2 b) { return H2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }                  \
    static inline H2 __hmin2(H2 a, H2 b) { return H2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }                  \
    static inline H operator+(const H& a, const H& b) { return __hadd(a, b); }                               \
    static inline H operator-(const H& a, const H& b) { return __hsub(a, b); }                               \
    static inline H operator*(const H& a, const H& b) { return __hmul(a, b); }                               \
    static inline H operator/(const H& a, const H& b) { return __hdiv(a, b); }                               \
    static inline H& operator+=(H& a, const H& b) { a = __hadd(a, b); return a; }                            \
    static inline H& operator-=(H& a, const H& b) { a = __hsub(a, b); return a; }                            \
    static inline H& operator*=(H& a, const H& b) { a = __hmul(a, b); return a; }                            \
    static inline H& operator/=(H& a, const H& b) { a = __hdiv(a, b); return a; }                            \
    static inline H operator-(const H& a) { return __hneg(a); }                                              \
    static inline H operator+(const H& a) { return a; }                                                      \
    static inline bool operator==(const H& a, const H& b) { return __heq(a, b); }                            \
    static inline bool operator!=(const H& a, const H& b) { return __hne(a, b); }                            \
    static inline bool operator<(const H& a, const H& b) { return __hlt(a, b); }                             \
    static inline bool operator<=(const H& a, const H& b) { return __hle(a, b); }                            \
    static inline bool operator>(const H& a, const H& b) { return __hgt(a, b); }                             \
    static inline bool operator>=(const H& a, const H& b) { return __hge(a, b); }                            \
    static inline H2 operator+(const H2& a, const H2& b) { return __hadd2(a, b); }                           \
    static inline H2 operator-(const H2& a, const H2& b) { return __hsub2(a, b); }                           \
    static inline H2 operator*(const H2& a, const H2& b) { return __hmul2(a, b); }                           \
    static inline H2 operator/(const H2& a, const H2& b) { return __h2div(a, b); }                           \
    static inline H2& operator+=(H2& a, const H2& b) { a = __hadd2(a, b); return a; }                        \
    static inline H2& operator-=(H2& a, const H2& b) { a = __hsub2(a, b); return a; }                        \
    static inline H2& operator*=(H2& a, const H2& b) { a = __hmul2(a, b); return a; }                        \
    static inline H2 operator-(const H2& a) { return __hneg2(a); }                                           \
    static inline H atomicAdd(H* p, H v) { H old = *p; *p = __hadd(old, v); return old; }                   \
    static inline H2 atomicAdd(H2* p, H2 v) { H2 old = *p; *p = __hadd2(old, v); return old; }

EMU_LOWP_OPS(__half, __half2)
EMU_LOWP_OPS(__nv_bfloat16, __nv_bfloat162)
#undef EMU_LOWP_OPS

// a few math functions (computed in float, rounded once; the GPU's are approximate too)
static inline __half hsqrt(__half a) { return __float2half(sqrtf(__half2float(a))); }
static inline __half hrsqrt(__half a) { return __float2half(1.0f / sqrtf(__half2float(a))); }
static inline __half hexp(__half a) { return __float2half(expf(__half2float(a))); }
static inline __half hrcp(__half a) { return __float2half(1.0f / __half2float(a)); }
static inline __nv_bfloat16 hsqrt(__nv_bfloat16 a) { return __float2bfloat16(sqrtf(__bfloat162float(a))); }
static inline __nv_bfloat16 hrsqrt(__nv_bfloat16 a) { return __float2bfloat16(1.0f / sqrtf(__bfloat162float(a))); }
static inline __nv_bfloat16 hexp(__nv_bfloat16 a) { return __float2bfloat16(expf(__bfloat162float(a))); }
static inline __nv_bfloat16 hrcp(__nv_bfloat16 a) { return __float2bfloat16(1.0f / __bfloat162float(a)); }

// cache-hinted loads of the new types go through the templates in cuda_emu.h (__ldg and friends)

// ---------------------------------------------------------------- fp8
typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short __nv_fp8x2_storage_t;
typedef unsigned int __nv_fp8x4_storage_t;
enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE };
enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 };

static inline emu_minifloat emu_fp8_fmt(__nv_fp8_interpretation_t k) { return k == __NV_E4M3 ? EMU_E4M3 : EMU_E5M2; }
static inline __nv_fp8_storage_t __nv_cvt_double_to_fp8(double x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return (__nv_fp8_storage_t)emu_round_mf(x, 0.0, emu_fp8_fmt(k), EMU_RN, s == __NV_SATFINITE);
}
static inline __nv_fp8_storage_t __nv_cvt_float_to_fp8(float x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return __nv_cvt_double_to_fp8((double)x, s, k);
}
static inline __nv_fp8x2_storage_t __nv_cvt_float2_to_fp8x2(float2 x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return (__nv_fp8x2_storage_t)(__nv_cvt_float_to_fp8(x.x, s, k) | (__nv_cvt_float_to_fp8(x.y, s, k) << 8));
}
static inline __nv_fp8x2_storage_t __nv_cvt_double2_to_fp8x2(double2 x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return (__nv_fp8x2_storage_t)(__nv_cvt_double_to_fp8(x.x, s, k) | (__nv_cvt_double_to_fp8(x.y, s, k) << 8));
}
static inline __nv_fp8_storage_t __nv_cvt_halfraw_to_fp8(__half_raw x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return __nv_cvt_double_to_fp8(emu_mf_to_double(x.x, EMU_F16), s, k);
}
static inline __nv_fp8x2_storage_t __nv_cvt_halfraw2_to_fp8x2(__half2_raw x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    __half_raw lo = {x.x}, hi = {x.y};
    return (__nv_fp8x2_storage_t)(__nv_cvt_halfraw_to_fp8(lo, s, k) | (__nv_cvt_halfraw_to_fp8(hi, s, k) << 8));
}
static inline __nv_fp8_storage_t __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return __nv_cvt_double_to_fp8(emu_mf_to_double(x.x, EMU_BF16), s, k);
}
static inline __nv_fp8x2_storage_t __nv_cvt_bfloat16raw2_to_fp8x2(__nv_bfloat162_raw x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    __nv_bfloat16_raw lo = {x.x}, hi = {x.y};
    return (__nv_fp8x2_storage_t)(__nv_cvt_bfloat16raw_to_fp8(lo, s, k) | (__nv_cvt_bfloat16raw_to_fp8(hi, s, k) << 8));
}
// fp8 -> half is exact (every e4m3 and e5m2 value is a half)
static inline __half_raw __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t x, __nv_fp8_interpretation_t k) {
    __half_raw r;
    double v = emu_mf_to_double(x, emu_fp8_fmt(k));
    r.x = (unsigned short)(v != v ? 0x7FFFu : emu_round_mf(v, 0.0, EMU_F16, EMU_RN, 0));
    return r;
}
static inline __half2_raw __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t x, __nv_fp8_interpretation_t k) {
    __half2_raw r;
    r.x = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)(x & 0xFFu), k).x;
    r.y = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)(x >> 8), k).x;
    return r;
}

#define EMU_FP8_TYPES(KIND, SUFFIX)                                                                            \
    struct __attribute__((aligned(1))) __nv_fp8_##SUFFIX {                                                    \
        __nv_fp8_storage_t __x;                                                                               \
        __nv_fp8_##SUFFIX() = default;                                                                        \
        explicit __nv_fp8_##SUFFIX(const __half f) : __x(__nv_cvt_halfraw_to_fp8(f, __NV_SATFINITE, KIND)) {} \
        explicit __nv_fp8_##SUFFIX(const __nv_bfloat16 f) : __x(__nv_cvt_bfloat16raw_to_fp8(f, __NV_SATFINITE, KIND)) {} \
        explicit __nv_fp8_##SUFFIX(const float f) : __x(__nv_cvt_float_to_fp8(f, __NV_SATFINITE, KIND)) {}     \
        explicit __nv_fp8_##SUFFIX(const double f) : __x(__nv_cvt_double_to_fp8(f, __NV_SATFINITE, KIND)) {}   \
        explicit __nv_fp8_##SUFFIX(const int v) : __nv_fp8_##SUFFIX((float)v) {}                              \
        explicit __nv_fp8_##SUFFIX(const unsigned int v) : __nv_fp8_##SUFFIX((float)v) {}                     \
        explicit __nv_fp8_##SUFFIX(const long long v) : __nv_fp8_##SUFFIX((float)v) {}                       \
        explicit operator __half() const { return __half(__nv_cvt_fp8_to_halfraw(__x, KIND)); }               \
        explicit operator float() const { return (float)emu_mf_to_double(__x, emu_fp8_fmt(KIND)); }           \
        explicit operator double() const { return emu_mf_to_double(__x, emu_fp8_fmt(KIND)); }                 \
        explicit operator __nv_bfloat16() const { return __float2bfloat16_rz((float)*this); }                \
    };                                                                                                         \
    struct __attribute__((aligned(2))) __nv_fp8x2_##SUFFIX {                                                  \
        __nv_fp8x2_storage_t __x;                                                                             \
        __nv_fp8x2_##SUFFIX() = default;                                                                      \
        explicit __nv_fp8x2_##SUFFIX(const __half2 f) : __x(__nv_cvt_halfraw2_to_fp8x2(f, __NV_SATFINITE, KIND)) {} \
        explicit __nv_fp8x2_##SUFFIX(const __nv_bfloat162 f) : __x(__nv_cvt_bfloat16raw2_to_fp8x2(f, __NV_SATFINITE, KIND)) {} \
        explicit __nv_fp8x2_##SUFFIX(const float2 f) : __x(__nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, KIND)) {} \
        explicit __nv_fp8x2_##SUFFIX(const double2 f) : __x(__nv_cvt_double2_to_fp8x2(f, __NV_SATFINITE, KIND)) {} \
        explicit operator __half2() const { return __half2(__nv_cvt_fp8x2_to_halfraw2(__x, KIND)); }          \
        explicit operator float2() const {                                                                    \
            __half2 h = __half2(__nv_cvt_fp8x2_to_halfraw2(__x, KIND));                                       \
            return __half22float2(h);                                                                         \
        }                                                                                                     \
    };                                                                                                         \
    struct __attribute__((aligned(4))) __nv_fp8x4_##SUFFIX {                                                  \
        __nv_fp8x4_storage_t __x;                                                                             \
        __nv_fp8x4_##SUFFIX() = default;                                                                      \
        explicit __nv_fp8x4_##SUFFIX(const __half2 lo, const __half2 hi)                                      \
            : __x(__nv_cvt_halfraw2_to_fp8x2(lo, __NV_SATFINITE, KIND) |                                      \
                  ((__nv_fp8x4_storage_t)__nv_cvt_halfraw2_to_fp8x2(hi, __NV_SATFINITE, KIND) << 16)) {}      \
        explicit __nv_fp8x4_##SUFFIX(const __nv_bfloat162 lo, const __nv_bfloat162 hi)                        \
            : __x(__nv_cvt_bfloat16raw2_to_fp8x2(lo, __NV_SATFINITE, KIND) |                                  \
                  ((__nv_fp8x4_storage_t)__nv_cvt_bfloat16raw2_to_fp8x2(hi, __NV_SATFINITE, KIND) << 16)) {}  \
        explicit __nv_fp8x4_##SUFFIX(const float4 f)                                                          \
            : __x(__nv_cvt_float2_to_fp8x2(make_float2(f.x, f.y), __NV_SATFINITE, KIND) |                     \
                  ((__nv_fp8x4_storage_t)__nv_cvt_float2_to_fp8x2(make_float2(f.z, f.w), __NV_SATFINITE, KIND) << 16)) {} \
        explicit operator float4() const {                                                                    \
            float2 lo = (float2)__nv_fp8x2_##SUFFIX##_from(__x & 0xFFFFu), hi = (float2)__nv_fp8x2_##SUFFIX##_from(__x >> 16); \
            return make_float4(lo.x, lo.y, hi.x, hi.y);                                                       \
        }                                                                                                     \
        static __nv_fp8x2_##SUFFIX __nv_fp8x2_##SUFFIX##_from(unsigned b) {                                   \
            __nv_fp8x2_##SUFFIX r;                                                                            \
            r.__x = (__nv_fp8x2_storage_t)b;                                                                  \
            return r;                                                                                         \
        }                                                                                                     \
    };

EMU_FP8_TYPES(__NV_E4M3, e4m3)
EMU_FP8_TYPES(__NV_E5M2, e5m2)
#undef EMU_FP8_TYPES
static_assert(sizeof(__nv_fp8_e4m3) == 1 && sizeof(__nv_fp8x2_e4m3) == 2 && sizeof(__nv_fp8x4_e4m3) == 4, "fp8 layout");
