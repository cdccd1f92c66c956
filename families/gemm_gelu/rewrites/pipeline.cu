// The start's tiles, k-step of 16 and epilogue; the X and W tiles go through
// a 3-stage cuda::pipeline: cuda::memcpy_async (cp.async, 16 bytes per call)
// fills stage t+2 while stage t is multiplied. After the k loop the epilogue
// scratch reuses the stage memory.
#include <mma.h>
#include <cuda_bf16.h>
#include <cuda/pipeline>
using namespace nvcuda;

#define BM 128
#define BN 256
#define BK 16
#define LDA (BK + 8)
#define LDB (BN + 8)
#define TILE (BM * LDA + BK * LDB)
#define STAGES 3

static __device__ __forceinline__ float gelu(float x)
{
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

extern "C" __global__ void k0(const __nv_bfloat16* __restrict__ X, const __nv_bfloat16* __restrict__ W,
                              const float* __restrict__ b, __nv_bfloat16* __restrict__ Y, int M, int N, int K)
{
    __shared__ __align__(128) __nv_bfloat16 smem[STAGES * TILE];
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = warp / 4, wn = warp % 4;
    const long long row0 = (long long)blockIdx.y * BM, col0 = (long long)blockIdx.x * BN;
    const int nk = K / BK;
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();

    auto issue = [&](int t) {
        __nv_bfloat16* Xs = smem + (t % STAGES) * TILE;
        __nv_bfloat16* Ws = Xs + BM * LDA;
        const long long k0 = (long long)t * BK;
        {
            const int r = tid / 2, q = tid % 2;
            cuda::memcpy_async(Xs + r * LDA + q * 8, X + (row0 + r) * K + k0 + q * 8, cuda::aligned_size_t<16>(16), pipe);
        }
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int c = tid + i * 256, r = c / 32, q = c % 32;
            cuda::memcpy_async(Ws + r * LDB + q * 8, W + (k0 + r) * N + col0 + q * 8, cuda::aligned_size_t<16>(16), pipe);
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
        const __nv_bfloat16* Xs = smem + (t % STAGES) * TILE;
        const __nv_bfloat16* Ws = Xs + BM * LDA;
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
        pipe.consumer_release();
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
