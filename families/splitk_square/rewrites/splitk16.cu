// Start's 64x64 tiles with K split into 16 slices along grid z: CTA (x, y, z)
// multiplies k in [z*K/16, (z+1)*K/16) and writes its fp32 partial tile to
// W[z]. A second kernel sums the 16 partials of each element into C.
#include <mma.h>
#include <cuda_bf16.h>
using namespace nvcuda;

#define BM 64
#define BN 64
#define BK 32
#define LDA (BK + 8)
#define LDB (BN + 8)
#define SLICES 16

extern "C" __global__ void k0(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                              float* __restrict__ W, int M, int N, int K)
{
    __shared__ __align__(128) __nv_bfloat16 As[BM * LDA];
    __shared__ __align__(128) __nv_bfloat16 Bs[BK * LDB];
    const int tid = threadIdx.x;
    const int wm = (tid / 32) / 2, wn = (tid / 32) % 2;
    const long long row0 = (long long)blockIdx.y * BM, col0 = (long long)blockIdx.x * BN;
    const long long klen = K / SLICES, kbeg = blockIdx.z * klen;
    float* P = W + (long long)blockIdx.z * M * N;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (long long k0 = kbeg; k0 < kbeg + klen; k0 += BK) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int c = tid + i * 128;
            const int ra = c / 4, qa = c % 4, rb = c / 8, qb = c % 8;
            *reinterpret_cast<uint4*>(As + ra * LDA + qa * 8) =
                *reinterpret_cast<const uint4*>(A + (row0 + ra) * K + k0 + qa * 8);
            *reinterpret_cast<uint4*>(Bs + rb * LDB + qb * 8) =
                *reinterpret_cast<const uint4*>(B + (k0 + rb) * N + col0 + qb * 8);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b[2];
#pragma unroll
            for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], As + (wm * 32 + i * 16) * LDA + kk, LDA);
#pragma unroll
            for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], Bs + kk * LDB + wn * 32 + j * 16, LDB);
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(P + (row0 + wm * 32 + i * 16) * N + col0 + wn * 32 + j * 16, acc[i][j], N,
                                    wmma::mem_row_major);
}

// One element of C per thread: the sum of its 16 partials, slice 0 first.
extern "C" __global__ void k1(const float* __restrict__ W, float* __restrict__ C, int M, int N)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x, mn = (long long)M * N;
    if (i >= mn) return;
    float s = 0.0f;
#pragma unroll
    for (int z = 0; z < SLICES; ++z) s += W[z * mn + i];
    C[i] = s;
}
