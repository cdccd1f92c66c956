// WRONG on purpose: the start with the sign of the sine term flipped in the
// first half (out[j] = x[j] * cos + x[j + 64] * sin), a rotation by -theta there.
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
    y[j] = __float2bfloat16_rn(x1 * c.x + x2 * c.y);
    y[j + 64] = __float2bfloat16_rn(x2 * c.x + x1 * c.y);
}
