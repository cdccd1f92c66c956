// The start's input tile with 64-thread CTAs: lane = (channel pair p, 4-wide
// strip s), warp = 7-row half of the tile. Each thread stages its 18 input
// vectors in two batches of 9 loads issued before their shared-memory stores,
// loads its 2 channels' 98 weights from global memory into registers, and, per
// output row and kernel row, loads a 10-wide window of bf16x2 inputs into
// registers that feeds 4 adjacent outputs along W for both channels (8
// accumulators).
#include <cuda_bf16.h>

#define TW 8
#define TH 14
#define TC 32

extern "C" __global__ void k0(const __nv_bfloat16* __restrict__ x, const float* __restrict__ wt,
                              const float* __restrict__ bias, __nv_bfloat16* __restrict__ y,
                              int H, int W, int C)
{
    __shared__ __align__(16) __nv_bfloat16 xs[TH + 6][TW + 6][TC];
    const int ng = C / TC, n = blockIdx.z / ng, c0 = (blockIdx.z % ng) * TC;
    const int h0 = blockIdx.y * TH, w0 = blockIdx.x * TW, tid = threadIdx.x;
    const __nv_bfloat16* xn = x + (long long)n * H * W * C;

#pragma unroll 1
    for (int i0 = tid; i0 < (TH + 6) * (TW + 6) * (TC / 8); i0 += 9 * 64) {   // batches of 9 loads before their stores
        uint4 val[9];
#pragma unroll
        for (int r = 0; r < 9; ++r) {
            const int i = i0 + 64 * r;
            const int v = i % (TC / 8), p = i / (TC / 8), pw = p % (TW + 6), ph = p / (TW + 6);
            const int gh = h0 - 3 + ph, gw = w0 - 3 + pw;
            val[r] = make_uint4(0u, 0u, 0u, 0u);
            if (i < (TH + 6) * (TW + 6) * (TC / 8) && gh >= 0 && gh < H && gw >= 0 && gw < W)
                val[r] = *(const uint4*)&xn[((long long)gh * W + gw) * C + c0 + v * 8];
        }
#pragma unroll
        for (int r = 0; r < 9; ++r)
            if (i0 + 64 * r < (TH + 6) * (TW + 6) * (TC / 8)) ((uint4*)xs)[i0 + 64 * r] = val[r];
    }
    __syncthreads();

    const int p = tid & 15, s = (tid >> 4) & 1, hb = (tid >> 5) * 7;
    float2 wr[49];
#pragma unroll
    for (int t = 0; t < 49; ++t) wr[t] = *(const float2*)&wt[t * C + c0 + 2 * p];
    const float2 b = *(const float2*)&bias[c0 + 2 * p];
    for (int th = hb; th < hb + 7 && h0 + th < H; ++th) {
        float2 acc[4];
#pragma unroll
        for (int o = 0; o < 4; ++o) acc[o] = b;
#pragma unroll
        for (int i = 0; i < 7; ++i) {
            float2 win[10];
#pragma unroll
            for (int u = 0; u < 10; ++u)
                win[u] = __bfloat1622float2(*(const __nv_bfloat162*)&xs[th + i][s * 4 + u][2 * p]);
#pragma unroll
            for (int j = 0; j < 7; ++j)
#pragma unroll
                for (int o = 0; o < 4; ++o) {
                    acc[o].x += win[o + j].x * wr[i * 7 + j].x;
                    acc[o].y += win[o + j].y * wr[i * 7 + j].y;
                }
        }
#pragma unroll
        for (int o = 0; o < 4; ++o) {
            const int gw = w0 + s * 4 + o;
            if (gw < W)
                *(__nv_bfloat162*)&y[((long long)(n * H + h0 + th) * W + gw) * C + c0 + 2 * p] = __floats2bfloat162_rn(acc[o].x, acc[o].y);
        }
    }
}
