// Two launches, one 256-thread block per row in each. k0 finds the row's
// largest value m[r] (float4 per thread per iteration, #pragma unroll 1,
// shuffles, then shared memory). k1 reads the row again and finds the
// smallest index holding m[r] the same way.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ m, int V)
{
    __shared__ float sv[8];
    const int t = threadIdx.x;
    const int lane = t & 31;
    const float4* row = reinterpret_cast<const float4*>(x + (long long)blockIdx.x * V);
    float bv = -__int_as_float(0x7f800000);
#pragma unroll 1
    for (int i = t; i < V / 4; i += 256) {
        const float4 v = row[i];
        bv = fmaxf(bv, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    }
    for (int d = 16; d > 0; d >>= 1) bv = fmaxf(bv, __shfl_xor_sync(0xffffffffu, bv, d));
    if (lane == 0) sv[t >> 5] = bv;
    __syncthreads();
    if (t < 32) {
        bv = lane < 8 ? sv[lane] : -__int_as_float(0x7f800000);
        for (int d = 4; d > 0; d >>= 1) bv = fmaxf(bv, __shfl_xor_sync(0xffffffffu, bv, d));
        if (t == 0) m[blockIdx.x] = bv;
    }
}

extern "C" __global__ void k1(const float* __restrict__ x, const float* __restrict__ m, int* __restrict__ idx, int V)
{
    __shared__ int si[8];
    const int t = threadIdx.x;
    const int lane = t & 31;
    const float4* row = reinterpret_cast<const float4*>(x + (long long)blockIdx.x * V);
    const float mr = m[blockIdx.x];
    int bi = 0x7fffffff;
#pragma unroll 1
    for (int i = t; i < V / 4; i += 256) {
        const float4 v = row[i];
        if (v.w == mr) bi = min(bi, 4 * i + 3);
        if (v.z == mr) bi = min(bi, 4 * i + 2);
        if (v.y == mr) bi = min(bi, 4 * i + 1);
        if (v.x == mr) bi = min(bi, 4 * i);
    }
    for (int d = 16; d > 0; d >>= 1) bi = min(bi, __shfl_xor_sync(0xffffffffu, bi, d));
    if (lane == 0) si[t >> 5] = bi;
    __syncthreads();
    if (t < 32) {
        bi = lane < 8 ? si[lane] : 0x7fffffff;
        for (int d = 4; d > 0; d >>= 1) bi = min(bi, __shfl_xor_sync(0xffffffffu, bi, d));
        if (t == 0) idx[blockIdx.x] = bi;
    }
}
