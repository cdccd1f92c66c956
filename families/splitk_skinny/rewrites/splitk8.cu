// Start's 64x64 tiles with K split into 8 slices along grid z: CTA (x, y, z)
// multiplies k in [z*K/8, (z+1)*K/8) and adds its fp32 partial tile into C
// (zeroed before the launch) with atomicAdd. After the k loop each warp passes
// one fragment at a time through a 16x16 fp32 scratch in the A tile's shared
// memory, so that every lane knows the coordinates of the 8 elements it adds.
#include <mma.h>
#include <cuda_bf16.h>
using namespace nvcuda;

#define BM 64
#define BN 64
#define BK 32
#define LDA (BK + 8)
#define LDB (BN + 8)
#define SLICES 8

extern "C" __global__ void k0(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                              float* __restrict__ C, int M, int N, int K)
{
    __shared__ __align__(128) __nv_bfloat16 As[BM * LDA];
    __shared__ __align__(128) __nv_bfloat16 Bs[BK * LDB];
    const int tid = threadIdx.x, lane = tid % 32;
    const int wm = (tid / 32) / 2, wn = (tid / 32) % 2;
    const long long row0 = (long long)blockIdx.y * BM, col0 = (long long)blockIdx.x * BN;
    const long long klen = K / SLICES, kbeg = blockIdx.z * klen;

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

    float* scratch = reinterpret_cast<float*>(As) + (tid / 32) * 256;
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            float* c = C + (row0 + wm * 32 + i * 16) * N + col0 + wn * 32 + j * 16;
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                const int idx = e * 32 + lane;
                atomicAdd(c + (idx / 16) * N + idx % 16, scratch[idx]);
            }
            __syncwarp();
        }
}
