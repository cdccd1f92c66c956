// A warp's 32 outputs need x[base-15 .. base+46], 62 values: lane l holds
// a = x[base+l-15] and b = x[base+l+17] in registers (zero outside x), and
// lanes 0..30 hold one weight each. Tap k of output base+l needs window value
// l+k: from a of lane l+k when l+k < 32, else from b of lane l+k-32, so source
// lane s offers a when s >= k and b otherwise, and one indexed shuffle fetches
// it; a second fetches w[k] from lane k. Every lane takes part in the shuffles
// (no early return); lanes past n compute and do not store.
extern "C" __global__ void k0(const float* __restrict__ x, const float* __restrict__ w,
                              float* __restrict__ y, int n)
{
    const int lane = threadIdx.x & 31;
    const int i = blockIdx.x * 256 + threadIdx.x;
    const int ja = i - 15;
    const int jb = i + 17;
    const float a = (ja >= 0 && ja < n) ? x[ja] : 0.0f;
    const float b = (jb >= 0 && jb < n) ? x[jb] : 0.0f;
    const float c = lane < 31 ? w[lane] : 0.0f;

    float acc = 0.0f;
    for (int k = 0; k < 31; ++k) {
        const float u = __shfl_sync(0xffffffffu, lane >= k ? a : b, (lane + k) & 31);
        acc += __shfl_sync(0xffffffffu, c, k) * u;
    }
    if (i < n) y[i] = acc;
}
