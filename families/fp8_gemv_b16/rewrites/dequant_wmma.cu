// Two launches on tensor cores. k0 converts W to fp16 into the workspace Wh
// [N][K] (16 weights per thread: one 16-byte load, two 16-byte stores). k1 is
// the register-staged WMMA kernel on the fp16 copy: 128-thread CTA of 4 warps,
// 16 rows per warp (64 per CTA); per 128-wide k chunk the CTA stages
// X[0..15][chunk] (fp16) in shared memory; each warp holds its 16 x 128 fp16
// tile in registers (8 16-byte loads per lane, issued one chunk ahead; lanes l
// and l + 16 read the two halves of each 32-byte sector of row l), and for each
// 64-wide part copies it into a per-warp shared tile and runs four 16x16x16
// WMMA steps (fp32 accumulator = Y^T block of 16 tokens x 16 rows).
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
using namespace nvcuda;

#define KC 128
#define LDX 136   // halves per staged X row
#define LDW 72    // halves per staged W row

extern "C" __global__ void k0(const __nv_fp8_e4m3* __restrict__ W, __half* __restrict__ Wh, int N, int K)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;   // 16 weights each
    if (i >= (long long)N * K / 16) return;
    const uint4 v = ((const uint4*)W)[i];
    const unsigned int* b = (const unsigned int*)&v;
    uint4 h[2];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        ((__half2_raw*)h)[2 * e] = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(b[e] & 0xffffu), __NV_E4M3);
        ((__half2_raw*)h)[2 * e + 1] = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(b[e] >> 16), __NV_E4M3);
    }
    ((uint4*)Wh)[2 * i] = h[0];
    ((uint4*)Wh)[2 * i + 1] = h[1];
}

extern "C" __global__ void k1(const __half* __restrict__ Wh, const __half* __restrict__ X,
                              const float* __restrict__ s, float* __restrict__ Y, int N, int K)
{
    __shared__ __align__(32) __half xs[16 * LDX];
    __shared__ __align__(32) __half ws[4][16 * LDW];
    __shared__ __align__(32) float ys[4][16 * 16];
    const int tid = threadIdx.x, w = tid >> 5, lane = tid & 31;
    const int n0 = blockIdx.x * 64 + w * 16;
    const int row = lane & 15, hh = lane >> 4;
    const __half* wr = Wh + (long long)(n0 + row) * K + hh * 8;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    uint4 wv[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) wv[e] = *(const uint4*)(wr + e * 16);
    for (int kb = 0; kb < K; kb += KC) {
        uint4 wn[8];   // the next chunk's W, in flight during this chunk
#pragma unroll
        for (int e = 0; e < 8; ++e) wn[e] = kb + KC < K ? *(const uint4*)(wr + kb + KC + e * 16) : wv[e];
        __syncthreads();
        for (int i = tid; i < 16 * KC / 8; i += 128) {
            const int m = i / (KC / 8), c = (i % (KC / 8)) * 8;
            *(uint4*)&xs[m * LDX + c] = *(const uint4*)&X[(long long)m * K + kb + c];
        }
        __syncthreads();
#pragma unroll
        for (int p = 0; p < 2; ++p) {
            __syncwarp();
            uint4* dst = (uint4*)&ws[w][row * LDW + hh * 8];   // k = hh * 8 + 16 * [0, 4)
#pragma unroll
            for (int e = 0; e < 4; ++e) dst[2 * e] = wv[4 * p + e];
            __syncwarp();
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> xf;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> wf;
                wmma::load_matrix_sync(xf, xs + p * 64 + kk * 16, LDX);
                wmma::load_matrix_sync(wf, ws[w] + kk * 16, LDW);
                wmma::mma_sync(acc, xf, wf, acc);
            }
        }
#pragma unroll
        for (int e = 0; e < 8; ++e) wv[e] = wn[e];
    }
    wmma::store_matrix_sync(ys[w], acc, 16, wmma::mem_row_major);   // [token][row]
    __syncwarp();
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        const int i = e * 32 + lane, m = i >> 4, c = i & 15;
        Y[(long long)m * N + n0 + c] = s[n0 + c] * ys[w][i];
    }
}
