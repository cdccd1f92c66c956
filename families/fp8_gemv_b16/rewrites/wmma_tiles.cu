// Tensor cores: 128-thread CTA of 4 warps, 16 rows of W per warp (64 per CTA).
// Per 256-wide k chunk the CTA stages X[0..15][chunk] (fp16) in shared memory;
// each warp holds its 16 x 256 fp8 tile in registers (8 16-byte loads per
// lane, issued one chunk ahead), and for each 64-wide part converts it to fp16
// (fp8x2 -> half2) into a per-warp shared tile and runs four 16x16x16 WMMA
// steps (X tile as matrix_a, the W tile as col-major matrix_b, fp32
// accumulator = Y^T block of 16 tokens x 16 rows). Lanes l and l + 16 read the
// two halves of one 32-byte sector of row l in each load, so every load
// instruction covers 16 whole sectors.
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
using namespace nvcuda;

#define KC 256
#define LDX 264   // halves per staged X row
#define LDW 72    // halves per converted W row

extern "C" __global__ void k0(const __nv_fp8_e4m3* __restrict__ W, const __half* __restrict__ X,
                              const float* __restrict__ s, float* __restrict__ Y, int N, int K)
{
    __shared__ __align__(32) __half xs[16 * LDX];
    __shared__ __align__(32) __half ws[4][16 * LDW];
    __shared__ __align__(32) float ys[4][16 * 16];
    const int tid = threadIdx.x, w = tid >> 5, lane = tid & 31;
    const int n0 = blockIdx.x * 64 + w * 16;
    const int row = lane & 15, hh = lane >> 4;   // this lane's W row and 16-byte half of each 32-byte sector
    const __nv_fp8_e4m3* wr = W + (long long)(n0 + row) * K + hh * 16;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    uint4 wv[8];
#pragma unroll
    for (int p = 0; p < 4; ++p) {
        wv[2 * p] = *(const uint4*)(wr + p * 64);
        wv[2 * p + 1] = *(const uint4*)(wr + p * 64 + 32);
    }
    for (int kb = 0; kb < K; kb += KC) {
        uint4 wn[8];   // the next chunk's W, in flight during this chunk
#pragma unroll
        for (int p = 0; p < 4; ++p) {
            wn[2 * p] = kb + KC < K ? *(const uint4*)(wr + kb + KC + p * 64) : wv[2 * p];
            wn[2 * p + 1] = kb + KC < K ? *(const uint4*)(wr + kb + KC + p * 64 + 32) : wv[2 * p + 1];
        }
        __syncthreads();
        for (int i = tid; i < 16 * KC / 8; i += 128) {
            const int m = i / (KC / 8), c = (i % (KC / 8)) * 8;
            *(uint4*)&xs[m * LDX + c] = *(const uint4*)&X[(long long)m * K + kb + c];
        }
        __syncthreads();
#pragma unroll
        for (int p = 0; p < 4; ++p) {
            uint4 h[4];
            const unsigned int* b = (const unsigned int*)&wv[2 * p];
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                ((__half2_raw*)h)[2 * e] = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(b[e] & 0xffffu), __NV_E4M3);
                ((__half2_raw*)h)[2 * e + 1] = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(b[e] >> 16), __NV_E4M3);
            }
            __syncwarp();
            uint4* dst = (uint4*)&ws[w][row * LDW + hh * 16];   // k = hh * 16 + [0, 16) and 32 + hh * 16 + [0, 16)
            dst[0] = h[0];
            dst[1] = h[1];
            dst[4] = h[2];
            dst[5] = h[3];
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
