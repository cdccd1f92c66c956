// Wrong on purpose: warp_row with the per-lane running sum never rescaled
// when the running max grows (s * expf(m_old - m_new) dropped), so terms
// summed under an older, smaller max stay too large.
static __device__ __forceinline__ void merge(float& m, float& s, float m2, float s2)
{
    const float mm = fmaxf(m, m2);
    s = s * expf(m - mm) + s2 * expf(m2 - mm);
    m = mm;
}

extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ y, int R, int C)
{
    const int lane = threadIdx.x & 31;
    const int r = blockIdx.x * 8 + (threadIdx.x >> 5);
    if (r >= R) return;
    const long long base = (long long)r * C;
    const float4* row = reinterpret_cast<const float4*>(x + base);
    float4* out = reinterpret_cast<float4*>(y + base);
    const int n4 = C / 4;

    float m = -3.402823466e38f;
    float s = 0.0f;
#pragma unroll 4
    for (int i = lane; i < n4; i += 32) {
        const float4 v = row[i];
        const float mm = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
        s = s + ((expf(v.x - mm) + expf(v.y - mm)) + (expf(v.z - mm) + expf(v.w - mm)));
        m = mm;
    }
    for (int d = 16; d > 0; d >>= 1)
        merge(m, s, __shfl_xor_sync(0xffffffffu, m, d), __shfl_xor_sync(0xffffffffu, s, d));
    const float rs = 1.0f / s;

#pragma unroll 4
    for (int i = lane; i < n4; i += 32) {
        const float4 v = row[i];
        out[i] = make_float4(expf(v.x - m) * rs, expf(v.y - m) * rs, expf(v.z - m) * rs, expf(v.w - m) * rs);
    }
}
