// WRONG on purpose: the start with the kernel flipped (tap (i, j) multiplies
// weight (6 - i, 6 - j)), a correlation with the rotated filter; the random
// weights are not symmetric, so every output moves.
#include <cuda_bf16.h>

#define TW 8
#define TH 14
#define TC 32

extern "C" __global__ void k0(const __nv_bfloat16* __restrict__ x, const float* __restrict__ wt,
                              const float* __restrict__ bias, __nv_bfloat16* __restrict__ y,
                              int H, int W, int C)
{
    __shared__ __align__(16) __nv_bfloat16 xs[TH + 6][TW + 6][TC];
    __shared__ float ws[49][TC];
    const int ng = C / TC, n = blockIdx.z / ng, c0 = (blockIdx.z % ng) * TC;
    const int h0 = blockIdx.y * TH, w0 = blockIdx.x * TW, tid = threadIdx.x;
    const __nv_bfloat16* xn = x + (long long)n * H * W * C;

    for (int i = tid; i < (TH + 6) * (TW + 6) * (TC / 8); i += 256) {
        const int v = i % (TC / 8), p = i / (TC / 8), pw = p % (TW + 6), ph = p / (TW + 6);
        const int gh = h0 - 3 + ph, gw = w0 - 3 + pw;
        uint4 val = make_uint4(0u, 0u, 0u, 0u);
        if (gh >= 0 && gh < H && gw >= 0 && gw < W)
            val = *(const uint4*)&xn[((long long)gh * W + gw) * C + c0 + v * 8];
        *(uint4*)&xs[ph][pw][v * 8] = val;
    }
    for (int i = tid; i < 49 * TC; i += 256) ws[i / TC][i % TC] = wt[(i / TC) * C + c0 + i % TC];
    __syncthreads();

    const int c = tid & 31, tw = tid >> 5, gw = w0 + tw;
    if (gw >= W) return;
    const float b = bias[c0 + c];
    for (int th = 0; th < TH && h0 + th < H; ++th) {
        float acc = b;
        for (int i = 0; i < 7; ++i)
            for (int j = 0; j < 7; ++j)
                acc += __bfloat162float(xs[th + i][tw + j][c]) * ws[(6 - i) * 7 + (6 - j)][c];
        y[((long long)(n * H + h0 + th) * W + gw) * C + c0 + c] = __float2bfloat16_rn(acc);
    }
}
