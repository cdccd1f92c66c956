// One warp per row as in the start; each iteration of the lane loop
// (#pragma unroll 1) loads four float4s, i, i + 32, i + 64 and i + 96, before
// comparing any of them, then scans them in index order into the lane's
// (value, index) pair; a one-float4 loop takes the last ones. The 32 lane
// pairs then merge with shuffles (larger value, then smaller index).
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
    int bi = 0x7fffffff;
    int i = lane;
#pragma unroll 1
    for (; i + 96 < n4; i += 128) {
        const float4 v0 = row[i];
        const float4 v1 = row[i + 32];
        const float4 v2 = row[i + 64];
        const float4 v3 = row[i + 96];
        scan4(bv, bi, v0, i);
        scan4(bv, bi, v1, i + 32);
        scan4(bv, bi, v2, i + 64);
        scan4(bv, bi, v3, i + 96);
    }
#pragma unroll 1
    for (; i < n4; i += 32) scan4(bv, bi, row[i], i);
    for (int d = 16; d > 0; d >>= 1)
        take(bv, bi, __shfl_xor_sync(0xffffffffu, bv, d), __shfl_xor_sync(0xffffffffu, bi, d));
    if (lane == 0) idx[r] = bi;
}
