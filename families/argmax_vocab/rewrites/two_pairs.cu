// One warp per row as in the start; the lane loop takes two float4s per
// iteration (i and i + 32, #pragma unroll 1 on the loop) into two running
// (value, index) pairs, then merges the pairs and the 32 lanes (larger value,
// then smaller index).
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

extern "C" __global__ void k0(const float* __restrict__ x, int* __restrict__ idx, int R, int V)
{
    const int lane = threadIdx.x & 31;
    const int r = blockIdx.x * 8 + (threadIdx.x >> 5);
    if (r >= R) return;
    const float4* row = reinterpret_cast<const float4*>(x + (long long)r * V);
    const int n4 = V / 4;
    float bv = -__int_as_float(0x7f800000);
    float bv1 = -__int_as_float(0x7f800000);
    int bi = 0x7fffffff;
    int bi1 = 0x7fffffff;
    int i = lane;
#pragma unroll 1
    for (; i + 32 < n4; i += 64) {
        const float4 a = row[i];
        const float4 b = row[i + 32];
        scan4(bv, bi, a, i);
        scan4(bv1, bi1, b, i + 32);
    }
    if (i < n4) scan4(bv, bi, row[i], i);
    take(bv, bi, bv1, bi1);
    for (int d = 16; d > 0; d >>= 1)
        take(bv, bi, __shfl_xor_sync(0xffffffffu, bv, d), __shfl_xor_sync(0xffffffffu, bi, d));
    if (lane == 0) idx[r] = bi;
}
