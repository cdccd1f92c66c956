// Two kernels. k0: the start's GEMM mainloop, storing the fp32 accumulators
// straight to a workspace C (M x N fp32). k1: Y = GELU(C + b) elementwise,
// 8 elements per thread (two float4 loads, one 16-byte bf16 store).
#include <mma.h>
#include <cuda_bf16.h>
using namespace nvcuda;

#define BM 128
#define BN 256
#define BK 16
#define LDA (BK + 8)
#define LDB (BN + 8)

static __device__ __forceinline__ float gelu(float x)
{
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

extern "C" __global__ void k0(const __nv_bfloat16* __restrict__ X, const __nv_bfloat16* __restrict__ W,
                              float* __restrict__ C, int M, int N, int K)
{
    __shared__ __align__(128) __nv_bfloat16 Xs[BM * LDA];
    __shared__ __align__(128) __nv_bfloat16 Ws[BK * LDB];
    const int tid = threadIdx.x, warp = tid / 32;
    const int wm = warp / 4, wn = warp % 4;
    const long long row0 = (long long)blockIdx.y * BM, col0 = (long long)blockIdx.x * BN;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (long long k0 = 0; k0 < K; k0 += BK) {
        {
            const int r = tid / 2, q = tid % 2;
            *reinterpret_cast<uint4*>(Xs + r * LDA + q * 8) =
                *reinterpret_cast<const uint4*>(X + (row0 + r) * K + k0 + q * 8);
        }
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int c = tid + i * 256, r = c / 32, q = c % 32;
            *reinterpret_cast<uint4*>(Ws + r * LDB + q * 8) =
                *reinterpret_cast<const uint4*>(W + (k0 + r) * N + col0 + q * 8);
        }
        __syncthreads();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[4];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> bf[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) wmma::load_matrix_sync(a[i], Xs + (wm * 64 + i * 16) * LDA, LDA);
#pragma unroll
        for (int j = 0; j < 4; ++j) wmma::load_matrix_sync(bf[j], Ws + wn * 64 + j * 16, LDB);
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) wmma::mma_sync(acc[i][j], a[i], bf[j], acc[i][j]);
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
            wmma::store_matrix_sync(C + (row0 + wm * 64 + i * 16) * N + col0 + wn * 64 + j * 16, acc[i][j], N,
                                    wmma::mem_row_major);
}

extern "C" __global__ void k1(const float* __restrict__ C, const float* __restrict__ b,
                              __nv_bfloat16* __restrict__ Y, int M, int N)
{
    const long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (i >= (long long)M * N) return;
    const float4 u = *reinterpret_cast<const float4*>(C + i);
    const float4 v = *reinterpret_cast<const float4*>(C + i + 4);
    const float x[8] = {u.x, u.y, u.z, u.w, v.x, v.y, v.z, v.w};
    const long long col = i % N;
    __align__(16) __nv_bfloat16 out[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) out[e] = __float2bfloat16_rn(gelu(x[e] + b[col + e]));
    *reinterpret_cast<uint4*>(Y + i) = *reinterpret_cast<uint4*>(out);
}
