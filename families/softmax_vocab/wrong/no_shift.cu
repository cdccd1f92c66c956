// Wrong on purpose: the start with the max pass removed (m = 0). Exact in
// real arithmetic, but expf(x) overflows to inf on rows near +100, and
// inf / inf gives NaN.
static __device__ __forceinline__ float warp_sum(float v)
{
    for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
    return v;
}

extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ y, int C)
{
    __shared__ float shs[8];
    const int t = threadIdx.x;
    const int lane = t & 31;
    const long long base = (long long)blockIdx.x * C;
    const float4* row = reinterpret_cast<const float4*>(x + base);
    float4* out = reinterpret_cast<float4*>(y + base);
    const int n4 = C / 4;

    const float m = 0.0f;

    float s = 0.0f;
#pragma unroll 4
    for (int i = t; i < n4; i += 256) {
        const float4 v = row[i];
        s += (expf(v.x - m) + expf(v.y - m)) + (expf(v.z - m) + expf(v.w - m));
    }
    s = warp_sum(s);
    if (lane == 0) shs[t >> 5] = s;
    __syncthreads();
    const float r = 1.0f / warp_sum(lane < 8 ? shs[lane] : 0.0f);

#pragma unroll 4
    for (int i = t; i < n4; i += 256) {
        const float4 v = row[i];
        out[i] = make_float4(expf(v.x - m) * r, expf(v.y - m) * r, expf(v.z - m) * r, expf(v.w - m) * r);
    }
}
