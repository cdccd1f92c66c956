// A warp_insert: one warp per row; lane l holds the row's l-th largest value so far.
// Four float4 loads per lane are issued before any is used; each of the 16 values a
// lane then holds is tested against the 32nd largest by one ballot, and every value
// that passes is inserted by the whole warp: its place is the count of lanes holding
// a value >= it, the lanes below move up one by a shuffle.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int R, int C)
{
    const int lane = threadIdx.x & 31;
    const int r = blockIdx.x * 8 + (threadIdx.x >> 5);
    if (r >= R) return;
    const float4* row4 = reinterpret_cast<const float4*>(x + (long long)r * C);
    const int n4 = C >> 2;
    const int steps = (n4 + 31) >> 5;
    const float4 none = make_float4(__uint_as_float(0xff800000u), __uint_as_float(0xff800000u), __uint_as_float(0xff800000u), __uint_as_float(0xff800000u));
    float mine = __uint_as_float(0xff800000u);
    float kth = __uint_as_float(0xff800000u);
    for (int s = 0; s < steps; s += 4) {
        float4 q[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int i = (s + u) * 32 + lane;
            q[u] = i < n4 ? row4[i] : none;
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const float cand[4] = {q[u].x, q[u].y, q[u].z, q[u].w};
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                unsigned int m = __ballot_sync(0xffffffffu, cand[e] > kth);
                while (m) {
                    const int src = __ffs(m) - 1;
                    m &= m - 1;
                    const float v = __shfl_sync(0xffffffffu, cand[e], src);
                    if (v > kth) {
                        const int pos = __popc(__ballot_sync(0xffffffffu, mine >= v));
                        const float up = __shfl_up_sync(0xffffffffu, mine, 1);
                        mine = lane < pos ? mine : (lane == pos ? v : up);
                        kth = __shfl_sync(0xffffffffu, mine, 31);
                    }
                }
            }
        }
    }
    out[(long long)r * 32 + lane] = mine;
}
