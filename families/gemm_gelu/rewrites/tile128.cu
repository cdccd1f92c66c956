// 128x128 CTA tiles with 8 warps in a 2x4 grid, each warp owning a 64x32
// block of Y (4x2 fragments). Staging as in the start (16-byte loads into
// padded shared rows, a barrier, then the multiply) with a 16-wide k-step, and
// the start's epilogue: one fragment at a time through a 16x16 fp32 scratch.
#include <mma.h>
#include <cuda_bf16.h>
using namespace nvcuda;

#define BM 128
#define BN 128
#define BK 16
#define LDA (BK + 8)
#define LDB (BN + 8)
#define TILE (BM * LDA + BK * LDB)

static __device__ __forceinline__ float gelu(float x)
{
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

extern "C" __global__ void k0(const __nv_bfloat16* __restrict__ X, const __nv_bfloat16* __restrict__ W,
                              const float* __restrict__ b, __nv_bfloat16* __restrict__ Y, int M, int N, int K)
{
    __shared__ __align__(128) __nv_bfloat16 smem[TILE];
    __nv_bfloat16* Xs = smem;
    __nv_bfloat16* Ws = smem + BM * LDA;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = warp / 4, wn = warp % 4;
    const long long row0 = (long long)blockIdx.y * BM, col0 = (long long)blockIdx.x * BN;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (long long k0 = 0; k0 < K; k0 += BK) {
        // X tile: 128 rows of 2 16-byte chunks; W tile: 16 rows of 16 chunks.
        {
            const int r = tid / 2, q = tid % 2;
            *reinterpret_cast<uint4*>(Xs + r * LDA + q * 8) =
                *reinterpret_cast<const uint4*>(X + (row0 + r) * K + k0 + q * 8);
        }
        {
            const int r = tid / 16, q = tid % 16;
            *reinterpret_cast<uint4*>(Ws + r * LDB + q * 8) =
                *reinterpret_cast<const uint4*>(W + (k0 + r) * N + col0 + q * 8);
        }
        __syncthreads();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[4];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> bf[2];
#pragma unroll
        for (int i = 0; i < 4; ++i) wmma::load_matrix_sync(a[i], Xs + (wm * 64 + i * 16) * LDA, LDA);
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(bf[j], Ws + wn * 32 + j * 16, LDB);
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], bf[j], acc[i][j]);
        __syncthreads();
    }

    float* scratch = reinterpret_cast<float*>(smem) + warp * 256;
    const int er = lane / 2, ec = (lane % 2) * 8;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            const long long col = col0 + wn * 32 + j * 16 + ec;
            __align__(16) __nv_bfloat16 out[8];
#pragma unroll
            for (int e = 0; e < 8; ++e) out[e] = __float2bfloat16_rn(gelu(scratch[er * 16 + ec + e] + b[col + e]));
            *reinterpret_cast<uint4*>(Y + (row0 + wm * 64 + i * 16 + er) * N + col) = *reinterpret_cast<uint4*>(out);
            __syncwarp();
        }
}
