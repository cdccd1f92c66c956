// SparkTrace CPU emulator: <mma.h>, nvcuda::wmma for half and bfloat16 with float (or half)
// accumulators, shapes m16n16k16, m32n8k16 and m8n32k16.
//
// The element layout of a fragment is the emulator's own, different from every GPU's
// (CUDA leaves it unspecified): element i of lane l is matrix element e = (i mod U)*32 + l
// in row-major order, U = rows*cols/32; a half A/B fragment holds each element twice, as
// the GPU's do (num_elements 16). Code that only loads, stores, fills, multiplies and
// changes every x[i] alike gets the same answer here as on a GPU; code that relies on
// where an element sits gets a different one, and mma_sync refuses a fragment whose two
// copies of an element were changed differently.
//
// load_matrix_sync / store_matrix_sync wait for the whole warp (they are .sync), then each
// lane moves its own elements: a lane that reads what another lane stored through
// store_matrix_sync needs a __syncwarp() first, as on a GPU. mma_sync computes in double
// and rounds each result once. Pointers must be 32-byte aligned and ldm a multiple of
// 16 bytes (CUDA's documented requirements); the emulator checks both (see emu_wmma_check).
#pragma once
#include <type_traits>

#include "cuda_bf16.h"
#include "cuda_fp16.h"

namespace nvcuda {
namespace wmma {

struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K>
struct emu_dims;
template <int M, int N, int K>
struct emu_dims<matrix_a, M, N, K> { static constexpr int rows = M, cols = K; };
template <int M, int N, int K>
struct emu_dims<matrix_b, M, N, K> { static constexpr int rows = K, cols = N; };
template <int M, int N, int K>
struct emu_dims<accumulator, M, N, K> { static constexpr int rows = M, cols = N; };

template <class Use, class T, int M, int N, int K>
struct emu_nelem {
    static constexpr int unique = emu_dims<Use, M, N, K>::rows * emu_dims<Use, M, N, K>::cols / 32;
    static constexpr int value = (std::is_same<T, __half>::value && !std::is_same<Use, accumulator>::value) ? 16 : unique;
};

template <class T, int NE>
struct __frag_base {
    enum { num_elements = NE, num_storage_elements = NE };
    typedef T element_type;
    typedef T storage_element_type;
    T x[NE];
};

template <class Use, int M, int N, int K, class T, class Layout = void>
class fragment : public __frag_base<T, emu_nelem<Use, T, M, N, K>::value> {
    static_assert((M == 16 && N == 16 && K == 16) || (M == 32 && N == 8 && K == 16) || (M == 8 && N == 32 && K == 16),
                  "the emulator's wmma has shapes m16n16k16, m32n8k16 and m8n32k16");
    static_assert(std::is_same<Use, accumulator>::value
                      ? (std::is_same<T, float>::value || std::is_same<T, __half>::value) && std::is_same<Layout, void>::value
                      : (std::is_same<T, __half>::value || std::is_same<T, __nv_bfloat16>::value) &&
                            (std::is_same<Layout, row_major>::value || std::is_same<Layout, col_major>::value),
                  "the emulator's wmma: half or __nv_bfloat16 A/B fragments with a row_major/col_major layout; "
                  "float or half accumulators");
};

// lane `lane`'s element i as (row, col) of the rows x cols matrix
template <int ROWS, int COLS>
static inline void emu_elem(int i, unsigned lane, int* r, int* c) {
    constexpr int U = ROWS * COLS / 32;
    const int e = (i % U) * 32 + (int)lane;
    *r = e / COLS;
    *c = e % COLS;
}

static inline void emu_wmma_sync(const char* what) {
    emu_thread* t = emu_cur;
    if (t->warp * 32 + 32 > t->blk->n)
        emu_fail("%s: WMMA needs whole warps, and warp %u of this %u-thread block has only %u threads", what, t->warp,
                 t->blk->n, t->blk->n - t->warp * 32);
    emu_warp_op(EMU_OP_SYNCWARP, 0xffffffffu, 0, 0, what);
}
// Shared-memory pointers must be 32-byte aligned (the emulator starts a __shared__ array at its
// natural alignment, at least 16 bytes, or at its __align__; declare WMMA tiles __align__(32) or
// more, as a GPU needs too). Global buffers start only 16-byte aligned here (their ends abut guard
// pages), so for global pointers 16 bytes is what the emulator can check.
template <class T>
static inline void emu_wmma_check(const T* p, unsigned ldm, const char* what) {
    const unsigned need = emu_in_shared(p, 1) ? 32u : 16u;
    if ((uintptr_t)p % need)
        emu_fail("%s: the pointer %p is not %u-byte aligned; WMMA requires 256-bit alignment", what, (const void*)p, need);
    if ((ldm * sizeof(T)) % 16)
        emu_fail("%s: ldm = %u elements (%zu bytes) is not a multiple of 16 bytes, as WMMA requires", what, ldm, ldm * sizeof(T));
}

template <class Use, int M, int N, int K, class T, class Layout>
static inline void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, const T& v) {
    for (int i = 0; i < f.num_elements; ++i) f.x[i] = v;
}
template <class Use, int M, int N, int K, class T, class Layout, class V>
static inline typename std::enable_if<!std::is_same<T, V>::value>::type fill_fragment(fragment<Use, M, N, K, T, Layout>& f, const V& v) {
    const T t = T(v);
    for (int i = 0; i < f.num_elements; ++i) f.x[i] = t;
}

// A and B: the layout is the fragment's
template <class Use, int M, int N, int K, class T, class Layout>
static inline void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const T* p, unsigned ldm) {
    static_assert(!std::is_same<Layout, void>::value, "accumulators take a layout_t argument");
    emu_wmma_check(p, ldm, "wmma::load_matrix_sync");
    emu_wmma_sync("wmma::load_matrix_sync");
    constexpr int R = emu_dims<Use, M, N, K>::rows, C = emu_dims<Use, M, N, K>::cols;
    const unsigned lane = emu_cur->lane;
    for (int i = 0; i < f.num_elements; ++i) {
        int r, c;
        emu_elem<R, C>(i, lane, &r, &c);
        f.x[i] = std::is_same<Layout, row_major>::value ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
    }
}
template <int M, int N, int K, class T>
static inline void load_matrix_sync(fragment<accumulator, M, N, K, T>& f, const T* p, unsigned ldm, layout_t layout) {
    emu_wmma_check(p, ldm, "wmma::load_matrix_sync");
    emu_wmma_sync("wmma::load_matrix_sync");
    const unsigned lane = emu_cur->lane;
    for (int i = 0; i < f.num_elements; ++i) {
        int r, c;
        emu_elem<M, N>(i, lane, &r, &c);
        f.x[i] = layout == mem_row_major ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
    }
}
template <int M, int N, int K, class T>
static inline void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T>& f, unsigned ldm, layout_t layout) {
    emu_wmma_check(p, ldm, "wmma::store_matrix_sync");
    emu_wmma_sync("wmma::store_matrix_sync");
    const unsigned lane = emu_cur->lane;
    for (int i = 0; i < f.num_elements; ++i) {
        int r, c;
        emu_elem<M, N>(i, lane, &r, &c);
        (layout == mem_row_major ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r]) = f.x[i];
    }
}

template <int ROWS, int COLS, class Frag>
static inline void emu_collect(void** args, int which, double* out) {
    constexpr int U = ROWS * COLS / 32;
    for (unsigned lane = 0; lane < 32; ++lane) {
        const Frag* f = ((const Frag* const*)args[lane])[which];
        for (int i = 0; i < Frag::num_elements; ++i) {
            if (i >= U) {
                if (memcmp(&f->x[i], &f->x[i % U], sizeof f->x[i]))
                    emu_fail("wmma::mma_sync: lane %u's fragment holds two different values for one matrix element "
                             "(x[%d] and x[%d]): the kernel changed fragment elements by their position, which CUDA leaves "
                             "unspecified; change every element alike, or go through shared memory", lane, i, i % U);
                continue;
            }
            int r, c;
            emu_elem<ROWS, COLS>(i, lane, &r, &c);
            out[r * COLS + c] = (double)(float)f->x[i];
        }
    }
}

template <int M, int N, int K, class FD, class FA, class FB, class FC>
static void emu_mma_run(void** args, unsigned) {
    static double A[M * K], B[K * N], Cm[M * N];  // the scheduler's stack is not a fiber's: no reentrancy
    emu_collect<M, K, FA>(args, 1, A);
    emu_collect<K, N, FB>(args, 2, B);
    emu_collect<M, N, FC>(args, 3, Cm);
    double D[M * N];
    for (int r = 0; r < M; ++r)
        for (int c = 0; c < N; ++c) {
            double s = 0.0;
            for (int k = 0; k < K; ++k) s += A[r * K + k] * B[k * N + c];
            D[r * N + c] = s + Cm[r * N + c];
        }
    typedef typename FD::element_type TD;
    for (unsigned lane = 0; lane < 32; ++lane) {
        FD* d = ((FD* const*)args[lane])[0];
        for (int i = 0; i < FD::num_elements; ++i) {
            int r, c;
            emu_elem<M, N>(i, lane, &r, &c);
            d->x[i] = TD(D[r * N + c]);
        }
    }
}

template <int M, int N, int K, class TA, class LA, class LB, class TC, class TD>
static inline void mma_sync(fragment<accumulator, M, N, K, TD>& d, const fragment<matrix_a, M, N, K, TA, LA>& a,
                            const fragment<matrix_b, M, N, K, TA, LB>& b, const fragment<accumulator, M, N, K, TC>& c,
                            bool satf = false) {
    if (satf) emu_fail("wmma::mma_sync with satf = true is not emulated");
    typedef fragment<accumulator, M, N, K, TD> FD;
    typedef fragment<matrix_a, M, N, K, TA, LA> FA;
    typedef fragment<matrix_b, M, N, K, TA, LB> FB;
    typedef fragment<accumulator, M, N, K, TC> FC;
    const void* frags[4] = {&d, &a, &b, &c};  // read (and d written) while every lane waits
    emu_thread* t = emu_cur;
    if (t->warp * 32 + 32 > t->blk->n)
        emu_fail("wmma::mma_sync: WMMA needs whole warps, and warp %u of this %u-thread block has only %u threads", t->warp,
                 t->blk->n, t->blk->n - t->warp * 32);
    emu_warp_collective(&emu_mma_run<M, N, K, FD, FA, FB, FC>, (void*)frags, 0xffffffffu, "wmma::mma_sync");
}

}  // namespace wmma
}  // namespace nvcuda
