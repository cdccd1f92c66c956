// The start with one 1024-thread block per row: the same three passes over
// the row in global memory (max, sum of expf(x - max), y), float4 accesses,
// and two block reductions over 32 warps.
static __device__ __forceinline__ float warp_max(float v)
{
    for (int d = 16; d > 0; d >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, d));
    return v;
}

static __device__ __forceinline__ float warp_sum(float v)
{
    for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
    return v;
}

extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ y, int C)
{
    __shared__ float shm[32];
    __shared__ float shs[32];
    const int t = threadIdx.x;
    const int lane = t & 31;
    const long long base = (long long)blockIdx.x * C;
    const float4* row = reinterpret_cast<const float4*>(x + base);
    float4* out = reinterpret_cast<float4*>(y + base);
    const int n4 = C / 4;

    float m = -3.402823466e38f;
#pragma unroll 4
    for (int i = t; i < n4; i += 1024) {
        const float4 v = row[i];
        m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    }
    m = warp_max(m);
    if (lane == 0) shm[t >> 5] = m;
    __syncthreads();
    m = warp_max(shm[lane]);

    float s = 0.0f;
#pragma unroll 4
    for (int i = t; i < n4; i += 1024) {
        const float4 v = row[i];
        s += (expf(v.x - m) + expf(v.y - m)) + (expf(v.z - m) + expf(v.w - m));
    }
    s = warp_sum(s);
    if (lane == 0) shs[t >> 5] = s;
    __syncthreads();
    const float r = 1.0f / warp_sum(shs[lane]);

#pragma unroll 4
    for (int i = t; i < n4; i += 1024) {
        const float4 v = row[i];
        out[i] = make_float4(expf(v.x - m) * r, expf(v.y - m) * r, expf(v.z - m) * r, expf(v.w - m) * r);
    }
}
