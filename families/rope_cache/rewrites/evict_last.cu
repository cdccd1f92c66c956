// The start with the (cos, sin) table read through cuda::annotated_ptr with
// access_property::persisting (an L2 evict-last hint on every table load);
// otherwise as the start: one thread per pair, head-major order.
#include <cuda_bf16.h>
#include <cuda/annotated_ptr>

extern "C" __global__ void k0(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                              const float* __restrict__ cs, const int* __restrict__ pos,
                              __nv_bfloat16* __restrict__ qo, __nv_bfloat16* __restrict__ ko, int T, int HQ)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;   // token * 64 + pair
    if (i >= T * 64) return;
    const int j = i & 63, t = i >> 6, h = blockIdx.y;
    const __nv_bfloat16* x = h < HQ ? q + ((long long)h * T + t) * 128 : k + ((long long)(h - HQ) * T + t) * 128;
    __nv_bfloat16* y = h < HQ ? qo + ((long long)h * T + t) * 128 : ko + ((long long)(h - HQ) * T + t) * 128;
    cuda::annotated_ptr<const float2, cuda::access_property::persisting> tab((const float2*)cs);
    const float2 c = tab[(long long)pos[t] * 64 + j];
    const float x1 = __bfloat162float(x[j]);
    const float x2 = __bfloat162float(x[j + 64]);
    y[j] = __float2bfloat16_rn(x1 * c.x - x2 * c.y);
    y[j + 64] = __float2bfloat16_rn(x2 * c.x + x1 * c.y);
}
