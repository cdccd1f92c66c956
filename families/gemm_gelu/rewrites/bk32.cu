// The start with a 32-wide k-step: each step loads 128x32 of X and 32x256 of
// W (6 16-byte loads per thread; on sm_90 all issue before the first shared
// store, sm_100 and sm_121 interleave them with the stores),
// passes one barrier, then runs two 16-wide slices of MMAs (64 HMMA per warp)
// before the closing barrier. Half as many k-steps and barriers; tiles,
// single-stage staging and epilogue as in the start.
#include <mma.h>
#include <cuda_bf16.h>
using namespace nvcuda;

#define BM 128
#define BN 256
#define BK 32
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

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (long long k0 = 0; k0 < K; k0 += BK) {
        // X tile: 128 rows of 4 16-byte chunks; W tile: 32 rows of 32 chunks.
        uint4 xv[2], wv[4];
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int c = tid + i * 256, r = c / 4, q = c % 4;
            xv[i] = *reinterpret_cast<const uint4*>(X + (row0 + r) * K + k0 + q * 8);
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int c = tid + i * 256, r = c / 32, q = c % 32;
            wv[i] = *reinterpret_cast<const uint4*>(W + (k0 + r) * N + col0 + q * 8);
        }
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int c = tid + i * 256;
            *reinterpret_cast<uint4*>(Xs + (c / 4) * LDA + (c % 4) * 8) = xv[i];
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int c = tid + i * 256;
            *reinterpret_cast<uint4*>(Ws + (c / 32) * LDB + (c % 32) * 8) = wv[i];
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[4];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> bf[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) wmma::load_matrix_sync(a[i], Xs + (wm * 64 + i * 16) * LDA + kk, LDA);
#pragma unroll
            for (int j = 0; j < 4; ++j) wmma::load_matrix_sync(bf[j], Ws + kk * LDB + wn * 64 + j * 16, LDB);
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) wmma::mma_sync(acc[i][j], a[i], bf[j], acc[i][j]);
        }
        __syncthreads();
    }

    float* scratch = reinterpret_cast<float*>(smem) + warp * 256;
    const int er = lane / 2, ec = (lane % 2) * 8;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            const long long col = col0 + wn * 64 + j * 16 + ec;
            __align__(16) __nv_bfloat16 out[8];
#pragma unroll
            for (int e = 0; e < 8; ++e) out[e] = __float2bfloat16_rn(gelu(scratch[er * 16 + ec + e] + b[col + e]));
            *reinterpret_cast<uint4*>(Y + (row0 + wm * 64 + i * 16 + er) * N + col) = *reinterpret_cast<uint4*>(out);
            __syncwarp();
        }
}
