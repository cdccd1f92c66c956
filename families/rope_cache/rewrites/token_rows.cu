// One CTA per 4 consecutive tokens, with 8 threads for each head of each token
// (q heads, then k heads; blockDim.x = 4 * (HQ + HK) * 8): each thread rotates
// 8 consecutive pairs of one head with 16-byte accesses and reads their
// cos/sin (four float4) from its token's table row, which all the token's
// heads read at the same time.
#include <cuda_bf16.h>

extern "C" __global__ void k0(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                              const float* __restrict__ cs, const int* __restrict__ pos,
                              __nv_bfloat16* __restrict__ qo, __nv_bfloat16* __restrict__ ko, int T, int HQ)
{
    const int per = blockDim.x / 4;                          // threads per token: (HQ + HK) * 8
    const int t = blockIdx.x * 4 + threadIdx.x / per, h = (threadIdx.x % per) >> 3, g = (threadIdx.x & 7) * 8;
    if (t >= T) return;
    const __nv_bfloat16* x = h < HQ ? q + ((long long)h * T + t) * 128 : k + ((long long)(h - HQ) * T + t) * 128;
    __nv_bfloat16* y = h < HQ ? qo + ((long long)h * T + t) * 128 : ko + ((long long)(h - HQ) * T + t) * 128;
    const float4* c4 = (const float4*)(cs + ((long long)pos[t] * 64 + g) * 2);
    const uint4 a = *(const uint4*)(x + g);
    const uint4 b = *(const uint4*)(x + g + 64);
    const __nv_bfloat162* a2 = (const __nv_bfloat162*)&a;
    const __nv_bfloat162* b2 = (const __nv_bfloat162*)&b;
    uint4 ra, rb;
    __nv_bfloat162* ra2 = (__nv_bfloat162*)&ra;
    __nv_bfloat162* rb2 = (__nv_bfloat162*)&rb;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        const float4 c = c4[e];                  // (cos, sin) of pairs g + 2e and g + 2e + 1
        const float2 x1 = __bfloat1622float2(a2[e]);
        const float2 x2 = __bfloat1622float2(b2[e]);
        ra2[e] = __floats2bfloat162_rn(x1.x * c.x - x2.x * c.y, x1.y * c.z - x2.y * c.w);
        rb2[e] = __floats2bfloat162_rn(x2.x * c.x + x1.x * c.y, x2.y * c.z + x1.y * c.w);
    }
    *(uint4*)(y + g) = ra;
    *(uint4*)(y + g + 64) = rb;
}
