// The start's tiles and shared layout (rows of 32 and 128 halves), computed by
// 4 warps in a 2x2 grid, each owning a 64x64 block of C (4x4 fragments); the A
// and B tiles go through a 3-stage cuda::pipeline: cuda::memcpy_async
// (cp.async, 16 bytes per call) fills stage t+2 while stage t is multiplied.
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda/pipeline>
using namespace nvcuda;

#define BM 128
#define BN 128
#define BK 32
#define LDA 32
#define LDB 128
#define STAGES 3

extern "C" __global__ void k0(const __half* __restrict__ A, const __half* __restrict__ B, float* __restrict__ C,
                              int M, int N, int K)
{
    __shared__ __align__(128) __half As[STAGES][BM * LDA];
    __shared__ __align__(128) __half Bs[STAGES][BK * LDB];
    const int tid = threadIdx.x;
    const int wm = (tid / 32) / 2, wn = (tid / 32) % 2;
    const long long row0 = (long long)blockIdx.y * BM, col0 = (long long)blockIdx.x * BN;
    const int nk = K / BK;
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();

    auto issue = [&](int t) {
        const int s = t % STAGES;
        const long long k0 = (long long)t * BK;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int c = tid + i * 128;
            const int ra = c / 4, qa = c % 4, rb = c / 16, qb = c % 16;
            cuda::memcpy_async(As[s] + ra * LDA + qa * 8, A + (row0 + ra) * K + k0 + qa * 8,
                               cuda::aligned_size_t<16>(16), pipe);
            cuda::memcpy_async(Bs[s] + rb * LDB + qb * 8, B + (k0 + rb) * N + col0 + qb * 8,
                               cuda::aligned_size_t<16>(16), pipe);
        }
    };

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

#pragma unroll
    for (int t = 0; t < STAGES - 1; ++t) {
        pipe.producer_acquire();
        if (t < nk) issue(t);
        pipe.producer_commit();
    }
    for (int t = 0; t < nk; ++t) {
        pipe.producer_acquire();
        if (t + STAGES - 1 < nk) issue(t + STAGES - 1);
        pipe.producer_commit();
        pipe.consumer_wait();
        __syncthreads();
        const __half* as = As[t % STAGES];
        const __half* bs = Bs[t % STAGES];
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a[4];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) wmma::load_matrix_sync(a[i], as + (wm * 64 + i * 16) * LDA + kk, LDA);
#pragma unroll
            for (int j = 0; j < 4; ++j) wmma::load_matrix_sync(b[j], bs + kk * LDB + wn * 64 + j * 16, LDB);
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
        pipe.consumer_release();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
            wmma::store_matrix_sync(C + (row0 + wm * 64 + i * 16) * N + col0 + wn * 64 + j * 16, acc[i][j], N,
                                    wmma::mem_row_major);
}
