// One 1024-thread block per row and two passes. Pass one keeps a per-thread
// running max and a sum rescaled whenever that max grows (online softmax);
// the pairs are merged with shuffles, then one pair per warp in shared memory
// behind one barrier. Pass two reads the row again and writes y.
static __device__ __forceinline__ void merge(float& m, float& s, float m2, float s2)
{
    const float mm = fmaxf(m, m2);
    s = s * expf(m - mm) + s2 * expf(m2 - mm);
    m = mm;
}

static __device__ __forceinline__ void warp_merge(float& m, float& s)
{
    for (int d = 16; d > 0; d >>= 1)
        merge(m, s, __shfl_xor_sync(0xffffffffu, m, d), __shfl_xor_sync(0xffffffffu, s, d));
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
    float s = 0.0f;
#pragma unroll 4
    for (int i = t; i < n4; i += 1024) {
        const float4 v = row[i];
        const float mm = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
        s = s * expf(m - mm) + ((expf(v.x - mm) + expf(v.y - mm)) + (expf(v.z - mm) + expf(v.w - mm)));
        m = mm;
    }
    warp_merge(m, s);
    if (lane == 0) {
        shm[t >> 5] = m;
        shs[t >> 5] = s;
    }
    __syncthreads();
    m = shm[lane];
    s = shs[lane];
    warp_merge(m, s);
    const float rs = 1.0f / s;

#pragma unroll 4
    for (int i = t; i < n4; i += 1024) {
        const float4 v = row[i];
        out[i] = make_float4(expf(v.x - m) * rs, expf(v.y - m) * rs, expf(v.z - m) * rs, expf(v.w - m) * rs);
    }
}
