// The start's tile and staging with 448-thread CTAs: each thread computes one
// output pixel for 8 consecutive channels (lane = 8 columns x 4 channel
// octets, warp = output row), reading 8 bf16 inputs (one 16-byte load) and
// 8 weights (two 16-byte loads) from shared memory per tap.
#include <cuda_bf16.h>

#define TW 8
#define TH 14
#define TC 32

extern "C" __global__ void k0(const __nv_bfloat16* __restrict__ x, const float* __restrict__ wt,
                              const float* __restrict__ bias, __nv_bfloat16* __restrict__ y,
                              int H, int W, int C)
{
    __shared__ __align__(16) __nv_bfloat16 xs[TH + 6][TW + 6][TC];
    __shared__ __align__(16) float ws[49][TC];
    const int ng = C / TC, n = blockIdx.z / ng, c0 = (blockIdx.z % ng) * TC;
    const int h0 = blockIdx.y * TH, w0 = blockIdx.x * TW, tid = threadIdx.x;
    const __nv_bfloat16* xn = x + (long long)n * H * W * C;

    for (int i = tid; i < (TH + 6) * (TW + 6) * (TC / 8); i += 448) {
        const int v = i % (TC / 8), p = i / (TC / 8), pw = p % (TW + 6), ph = p / (TW + 6);
        const int gh = h0 - 3 + ph, gw = w0 - 3 + pw;
        uint4 val = make_uint4(0u, 0u, 0u, 0u);
        if (gh >= 0 && gh < H && gw >= 0 && gw < W)
            val = *(const uint4*)&xn[((long long)gh * W + gw) * C + c0 + v * 8];
        *(uint4*)&xs[ph][pw][v * 8] = val;
    }
    for (int i = tid; i < 49 * TC; i += 448) ws[i / TC][i % TC] = wt[(i / TC) * C + c0 + i % TC];
    __syncthreads();

    const int q = (tid & 3) * 8, tw = (tid >> 2) & 7, th = tid >> 5;
    const int gw = w0 + tw, gh = h0 + th;
    if (gw >= W || gh >= H) return;
    float acc[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] = bias[c0 + q + e];
    for (int i = 0; i < 7; ++i)
        for (int j = 0; j < 7; ++j) {
            const uint4 v = *(const uint4*)&xs[th + i][tw + j][q];
            const float4 wa = *(const float4*)&ws[i * 7 + j][q];
            const float4 wb = *(const float4*)&ws[i * 7 + j][q + 4];
            const __nv_bfloat162* v2 = (const __nv_bfloat162*)&v;
            const float2 a0 = __bfloat1622float2(v2[0]), a1 = __bfloat1622float2(v2[1]);
            const float2 a2 = __bfloat1622float2(v2[2]), a3 = __bfloat1622float2(v2[3]);
            acc[0] += a0.x * wa.x; acc[1] += a0.y * wa.y; acc[2] += a1.x * wa.z; acc[3] += a1.y * wa.w;
            acc[4] += a2.x * wb.x; acc[5] += a2.y * wb.y; acc[6] += a3.x * wb.z; acc[7] += a3.y * wb.w;
        }
    uint4 out;
    __nv_bfloat162* o2 = (__nv_bfloat162*)&out;
#pragma unroll
    for (int e = 0; e < 4; ++e) o2[e] = __floats2bfloat162_rn(acc[2 * e], acc[2 * e + 1]);
    *(uint4*)&y[((long long)(n * H + gh) * W + gw) * C + c0 + q] = out;
}
