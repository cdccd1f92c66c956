// One 256-thread block per row. The eight warps split the row (float4 i
// goes to thread i % 256, #pragma unroll 1); each warp merges its lanes'
// (value, index) pairs with shuffles, the eight warp results go through
// shared memory, and warp 0 merges them (larger value, then smaller index).
static __device__ __forceinline__ void take(float& bv, int& bi, float v, int i)
{
    if (v > bv || (v == bv && i < bi)) {
        bv = v;
        bi = i;
    }
}

static __device__ __forceinline__ void scan4(float& bv, int& bi, float4 v, int i)
{
    if (v.x > bv) { bv = v.x; bi = 4 * i; }
    if (v.y > bv) { bv = v.y; bi = 4 * i + 1; }
    if (v.z > bv) { bv = v.z; bi = 4 * i + 2; }
    if (v.w > bv) { bv = v.w; bi = 4 * i + 3; }
}

extern "C" __global__ void k0(const float* __restrict__ x, int* __restrict__ idx, int V)
{
    __shared__ float sv[8];
    __shared__ int si[8];
    const int t = threadIdx.x;
    const int lane = t & 31;
    const float4* row = reinterpret_cast<const float4*>(x + (long long)blockIdx.x * V);
    float bv = -__int_as_float(0x7f800000);
    int bi = 0x7fffffff;
#pragma unroll 1
    for (int i = t; i < V / 4; i += 256) scan4(bv, bi, row[i], i);
    for (int d = 16; d > 0; d >>= 1)
        take(bv, bi, __shfl_xor_sync(0xffffffffu, bv, d), __shfl_xor_sync(0xffffffffu, bi, d));
    if (lane == 0) {
        sv[t >> 5] = bv;
        si[t >> 5] = bi;
    }
    __syncthreads();
    if (t < 32) {
        bv = lane < 8 ? sv[lane] : -__int_as_float(0x7f800000);
        bi = lane < 8 ? si[lane] : 0x7fffffff;
        for (int d = 4; d > 0; d >>= 1)
            take(bv, bi, __shfl_xor_sync(0xffffffffu, bv, d), __shfl_xor_sync(0xffffffffu, bi, d));
        if (t == 0) idx[blockIdx.x] = bi;
    }
}
