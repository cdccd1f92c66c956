// The start's 128x256 tiles and mainloop with K split in four along grid z:
// CTA (x, y, z) runs k-steps [z*K/64, (z+1)*K/64) (rounded down) and stores
// its fp32 partial tile to P[z]. After a __threadfence() it adds one to the
// tile's ticket; the CTA that sees the fourth arrival adds the other three
// partials to its own accumulators and stores the tile to C.
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda/pipeline>
using namespace nvcuda;

#define BM 128
#define BN 256
#define BK 16
#define LDA (BK + 8)
#define LDB (BN + 8)
#define TILE (BM * LDA + BK * LDB)
#define STAGES 3

typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> Acc;

// acc += A[row0 .. row0+128, k-steps kt0 .. kt1) * B[k-steps, col0 .. col0+256)
static __device__ __forceinline__ void mainloop(Acc (&acc)[4][4], const __half* __restrict__ A,
                                                const __half* __restrict__ B, __half* smem, long long row0,
                                                long long col0, int kt0, int kt1, int N, int K)
{
    const int tid = threadIdx.x, wm = tid / 32 / 4, wn = tid / 32 % 4;
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    auto issue = [&](int t) {
        __half* As = smem + (t % STAGES) * TILE;
        __half* Bs = As + BM * LDA;
        const long long k0 = (long long)t * BK;
        cuda::memcpy_async(As + (tid / 2) * LDA + (tid % 2) * 8, A + (row0 + tid / 2) * K + k0 + (tid % 2) * 8,
                           cuda::aligned_size_t<16>(16), pipe);
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int c = tid + i * 256, r = c / 32, q = c % 32;
            cuda::memcpy_async(Bs + r * LDB + q * 8, B + (k0 + r) * N + col0 + q * 8, cuda::aligned_size_t<16>(16), pipe);
        }
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        pipe.producer_acquire();
        if (kt0 + s < kt1) issue(kt0 + s);
        pipe.producer_commit();
    }
    for (int t = kt0; t < kt1; ++t) {
        pipe.producer_acquire();
        if (t + STAGES - 1 < kt1) issue(t + STAGES - 1);
        pipe.producer_commit();
        pipe.consumer_wait();
        __syncthreads();
        const __half* As = smem + (t % STAGES) * TILE;
        const __half* Bs = As + BM * LDA;
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a[4];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) wmma::load_matrix_sync(a[i], As + (wm * 64 + i * 16) * LDA, LDA);
#pragma unroll
        for (int j = 0; j < 4; ++j) wmma::load_matrix_sync(b[j], Bs + wn * 64 + j * 16, LDB);
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        __syncthreads();
        pipe.consumer_release();
    }
}

extern "C" __global__ void k0(const __half* __restrict__ A, const __half* __restrict__ B, float* __restrict__ C,
                              float* __restrict__ P, int* __restrict__ ticket, int M, int N, int K)
{
    __shared__ __align__(128) __half smem[STAGES * TILE];
    __shared__ int last;
    const int wm = threadIdx.x / 32 / 4, wn = threadIdx.x / 32 % 4;
    const long long row0 = (long long)blockIdx.y * BM, col0 = (long long)blockIdx.x * BN;
    const long long mn = (long long)M * N, off = (row0 + wm * 64) * N + col0 + wn * 64;
    const int nk = K / BK, z = blockIdx.z;
    Acc acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
    mainloop(acc, A, B, smem, row0, col0, z * nk / 4, (z + 1) * nk / 4, N, K);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
            wmma::store_matrix_sync(P + z * mn + off + i * 16 * N + j * 16, acc[i][j], N, wmma::mem_row_major);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(ticket + blockIdx.y * gridDim.x + blockIdx.x, 1) == 3;
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (int s = 0; s < 4; ++s) {
        if (s == z) continue;
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                Acc t;
                wmma::load_matrix_sync(t, P + s * mn + off + i * 16 * N + j * 16, N, wmma::mem_row_major);
#pragma unroll
                for (int e = 0; e < t.num_elements; ++e) acc[i][j].x[e] += t.x[e];
            }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
            wmma::store_matrix_sync(C + off + i * 16 * N + j * 16, acc[i][j], N, wmma::mem_row_major);
}
