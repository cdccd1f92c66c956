// Greedy argmax over the vocabulary: idx[r] is the first index of the largest
// value in row r. One warp per row, eight rows per 256-thread block. Each
// lane walks the row one float4 per iteration (#pragma unroll 1) keeping its
// best (value, index); the 32 lane pairs merge with shuffles, the larger
// value winning and the smaller index breaking ties.
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
    float bv = -__int_as_float(0x7f800000);
    int bi = 0x7fffffff;
#pragma unroll 1
    for (int i = lane; i < V / 4; i += 32) scan4(bv, bi, row[i], i);
    for (int d = 16; d > 0; d >>= 1)
        take(bv, bi, __shfl_xor_sync(0xffffffffu, bv, d), __shfl_xor_sync(0xffffffffu, bi, d));
    if (lane == 0) idx[r] = bi;
}
