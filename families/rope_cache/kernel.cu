// NeoX rotary embedding on head-major q [HQ][T][128] and k [HK][T][128] (bf16).
// cs: [P][64] (cos, sin) pairs in fp32, row pos[t] for token t.
// out[j] = x[j] * cos_j - x[j + 64] * sin_j; out[j + 64] = x[j + 64] * cos_j + x[j] * sin_j.
// One thread per rotation pair; grid.y is the head (q heads, then k heads), so
// the grid walks every token of head 0, then of head 1, and so on.
#include <cuda_bf16.h>

extern "C" __global__ void k0(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                              const float* __restrict__ cs, const int* __restrict__ pos,
                              __nv_bfloat16* __restrict__ qo, __nv_bfloat16* __restrict__ ko, int T, int HQ)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;   // token * 64 + pair
    if (i >= T * 64) return;
    const int j = i & 63, t = i >> 6, h = blockIdx.y;
    const __nv_bfloat16* x = h < HQ ? q + ((long long)h * T + t) * 128 : k + ((long long)(h - HQ) * T + t) * 128;
    __nv_bfloat16* y = h < HQ ? qo + ((long long)h * T + t) * 128 : ko + ((long long)(h - HQ) * T + t) * 128;
    const float2 c = ((const float2*)cs)[(long long)pos[t] * 64 + j];
    const float x1 = __bfloat162float(x[j]);
    const float x2 = __bfloat162float(x[j + 64]);
    y[j] = __float2bfloat16_rn(x1 * c.x - x2 * c.y);
    y[j + 64] = __float2bfloat16_rn(x2 * c.x + x1 * c.y);
}
