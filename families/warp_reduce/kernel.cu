// Per 32-element group g: sum[g] = sum of x, absmax[g] = max |x|.
// 256-thread blocks (8 groups), one element per thread. Both statistics go
// through shared memory; a 5-level tree halves the active lanes per level and
// every level ends with a block-wide barrier. Lane 0 of each group writes.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ sum,
                              float* __restrict__ absmax, int n)
{
    __shared__ float s[256];
    __shared__ float m[256];
    const int t = threadIdx.x;
    const int lane = t % 32;
    const int i = blockIdx.x * 256 + t;

    const float v = i < n ? x[i] : 0.0f;
    s[t] = v;
    m[t] = fabsf(v);
    __syncthreads();
    for (int d = 1; d < 32; d *= 2) {
        if (lane % (2 * d) == 0) {
            s[t] += s[t + d];
            m[t] = fmaxf(m[t], m[t + d]);
        }
        __syncthreads();
    }
    if (lane == 0 && i < n) {
        sum[i / 32] = s[t];
        absmax[i / 32] = m[t];
    }
}
