// No shared memory: each warp reduces four consecutive groups. Lane l loads
// element l of each of the four (four independent coalesced loads, issued
// before the first shuffle), then a 5-step xor butterfly of register shuffles
// per statistic and group. n is a multiple of 32, so a group is wholly in range
// or wholly out; lane q writes group q's results.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ sum,
                              float* __restrict__ absmax, int n)
{
    const int lane = threadIdx.x % 32;
    const int g0 = (blockIdx.x * 256 + threadIdx.x) / 32 * 4;
    const int groups = n / 32;
    if (g0 >= groups) return;  // the whole warp leaves

    float s[4];
    float m[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        s[q] = g0 + q < groups ? x[(g0 + q) * 32 + lane] : 0.0f;
        m[q] = fabsf(s[q]);
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        for (int d = 16; d > 0; d /= 2) {
            s[q] += __shfl_xor_sync(0xffffffffu, s[q], d);
            m[q] = fmaxf(m[q], __shfl_xor_sync(0xffffffffu, m[q], d));
        }
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        if (lane == q && g0 + q < groups) {
            sum[g0 + q] = s[q];
            absmax[g0 + q] = m[q];
        }
    }
}
