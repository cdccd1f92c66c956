// 128x128 CTA tiles with 8 warps in a 2x4 grid, each warp owning a 64x32
// block of C (4x2 fragments). Staging as in the start: 16-byte loads into
// padded shared rows, a barrier, then the multiply.
#include <mma.h>
#include <cuda_bf16.h>
using namespace nvcuda;

#define BM 128
#define BN 128
#define BK 32
#define LDA (BK + 8)
#define LDB (BN + 8)

extern "C" __global__ void k0(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                              float* __restrict__ C, int M, int N, int K)
{
    __shared__ __align__(128) __nv_bfloat16 As[BM * LDA];
    __shared__ __align__(128) __nv_bfloat16 Bs[BK * LDB];
    const int tid = threadIdx.x;
    const int wm = (tid / 32) / 4, wn = (tid / 32) % 4;
    const long long row0 = (long long)blockIdx.y * BM, col0 = (long long)blockIdx.x * BN;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (long long k0 = 0; k0 < K; k0 += BK) {
        // A tile: 128 rows of 4 16-byte chunks; B tile: 32 rows of 16 chunks.
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int c = tid + i * 256;
            const int ra = c / 4, qa = c % 4, rb = c / 16, qb = c % 16;
            *reinterpret_cast<uint4*>(As + ra * LDA + qa * 8) =
                *reinterpret_cast<const uint4*>(A + (row0 + ra) * K + k0 + qa * 8);
            *reinterpret_cast<uint4*>(Bs + rb * LDB + qb * 8) =
                *reinterpret_cast<const uint4*>(B + (k0 + rb) * N + col0 + qb * 8);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[4];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b[2];
#pragma unroll
            for (int i = 0; i < 4; ++i) wmma::load_matrix_sync(a[i], As + (wm * 64 + i * 16) * LDA + kk, LDA);
#pragma unroll
            for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], Bs + kk * LDB + wn * 32 + j * 16, LDB);
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(C + (row0 + wm * 64 + i * 16) * N + col0 + wn * 32 + j * 16, acc[i][j], N,
                                    wmma::mem_row_major);
}
