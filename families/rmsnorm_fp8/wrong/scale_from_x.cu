// WRONG on purpose: the one-pass kernel with the row scale taken from max|x|
// instead of max|x*w| (w is not all ones), so s is off by the ratio of the two
// maxima and codes move by several e4m3 steps or saturate.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#define NV 4   // 16-byte vectors per thread: C <= 4 * 256 * 8

extern "C" __global__ void k0(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                              __nv_fp8_e4m3* __restrict__ q, float* __restrict__ s, int C, float eps)
{
    __shared__ float red[2][8];
    const int tid = threadIdx.x, nvec = C / 8;
    const uint4* xr = (const uint4*)(x + (long long)blockIdx.x * C);
    uint4 xv[NV];
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        const int v = j * 256 + tid;
        xv[j] = v < nvec ? xr[v] : make_uint4(0u, 0u, 0u, 0u);
    }
    float ss = 0.0f, mx = 0.0f;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        const __nv_bfloat162* xp = (const __nv_bfloat162*)&xv[j];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const float2 a = __bfloat1622float2(xp[e]);
            ss += a.x * a.x + a.y * a.y;
            mx = fmaxf(mx, fmaxf(fabsf(a.x), fabsf(a.y)));
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        ss += __shfl_xor_sync(0xffffffffu, ss, o);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    }
    if ((tid & 31) == 0) {
        red[0][tid >> 5] = ss;
        red[1][tid >> 5] = mx;
    }
    __syncthreads();
    ss = red[0][0];
    mx = red[1][0];
    for (int i = 1; i < 8; ++i) {
        ss += red[0][i];
        mx = fmaxf(mx, red[1][i]);
    }
    const float inv = rsqrtf(ss / C + eps);
    if (tid == 0) s[blockIdx.x] = inv * mx / 448.0f;
    const float f = mx > 0.0f ? 448.0f / mx : 0.0f;

    uint2* qr = (uint2*)(q + (long long)blockIdx.x * C);
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        const int v = j * 256 + tid;
        if (v < nvec) {
            const uint4 wv = ((const uint4*)w)[v];
            const __nv_bfloat162* xp = (const __nv_bfloat162*)&xv[j];
            const __nv_bfloat162* wp = (const __nv_bfloat162*)&wv;
            unsigned short c[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const float2 a = __bfloat1622float2(xp[e]);
                const float2 b = __bfloat1622float2(wp[e]);
                c[e] = __nv_cvt_float2_to_fp8x2(make_float2(a.x * b.x * f, a.y * b.y * f), __NV_SATFINITE, __NV_E4M3);
            }
            qr[v] = make_uint2(c[0] | ((unsigned)c[1] << 16), c[2] | ((unsigned)c[3] << 16));
        }
    }
}
