// Head-major order with heads in groups of 4 (grid.y = group): each thread
// loads the cos/sin of its 8 consecutive pairs (four float4) once and rotates
// those pairs of its token in each of the group's 4 heads with 16-byte
// accesses; the 4 heads' loads are issued before the first rotation. Heads
// past HQ + HK in the last group are skipped.
#include <cuda_bf16.h>

extern "C" __global__ void k0(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                              const float* __restrict__ cs, const int* __restrict__ pos,
                              __nv_bfloat16* __restrict__ qo, __nv_bfloat16* __restrict__ ko, int T, int HQ, int HK)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;   // token * 8 + group of 8 pairs
    if (i >= T * 8) return;
    const int g = (i & 7) * 8, t = i >> 3;
    const float4* c4 = (const float4*)(cs + ((long long)pos[t] * 64 + g) * 2);
    float4 c[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) c[e] = c4[e];               // (cos, sin) of pairs g + 2e and g + 2e + 1
    uint4 a[4], b[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
        const int h = blockIdx.y * 4 + u;
        if (h < HQ + HK) {
            const __nv_bfloat16* x = h < HQ ? q + ((long long)h * T + t) * 128 : k + ((long long)(h - HQ) * T + t) * 128;
            a[u] = *(const uint4*)(x + g);
            b[u] = *(const uint4*)(x + g + 64);
        }
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
        const int h = blockIdx.y * 4 + u;
        if (h < HQ + HK) {
            __nv_bfloat16* y = h < HQ ? qo + ((long long)h * T + t) * 128 : ko + ((long long)(h - HQ) * T + t) * 128;
            const __nv_bfloat162* a2 = (const __nv_bfloat162*)&a[u];
            const __nv_bfloat162* b2 = (const __nv_bfloat162*)&b[u];
            uint4 ra, rb;
            __nv_bfloat162* ra2 = (__nv_bfloat162*)&ra;
            __nv_bfloat162* rb2 = (__nv_bfloat162*)&rb;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const float2 x1 = __bfloat1622float2(a2[e]);
                const float2 x2 = __bfloat1622float2(b2[e]);
                ra2[e] = __floats2bfloat162_rn(x1.x * c[e].x - x2.x * c[e].y, x1.y * c[e].z - x2.y * c[e].w);
                rb2[e] = __floats2bfloat162_rn(x2.x * c[e].x + x1.x * c[e].y, x2.y * c[e].z + x1.y * c[e].w);
            }
            *(uint4*)(y + g) = ra;
            *(uint4*)(y + g + 64) = rb;
        }
    }
}
