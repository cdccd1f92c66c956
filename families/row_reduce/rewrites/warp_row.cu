// One warp per row, 256-thread blocks of 8 rows: lane l reads float4 number
// l, l+32, l+64, ... of the row; a butterfly of __shfl_xor_sync combines the
// 32 partial sums. r is the same for the whole warp, so the early return
// keeps every shuffle's 32 lanes together.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int R, int C)
{
    const int lane = threadIdx.x & 31;
    const int r = blockIdx.x * 8 + (threadIdx.x >> 5);
    if (r >= R) return;
    const float4* row = reinterpret_cast<const float4*>(x + (long long)r * C);
    float s = 0.0f;
    for (int c = lane; c < C / 4; c += 32) {
        const float4 v = row[c];
        s += (v.x + v.y) + (v.z + v.w);
    }
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) out[r] = s;
}
