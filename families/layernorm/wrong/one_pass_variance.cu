// WRONG ON PURPOSE: the warp-per-row kernel with the variance taken as
// E[x^2] - mean^2 in fp32. Exact in real arithmetic, but on the rows that
// make_inputs offsets to a mean of 1e4 the two terms cancel catastrophically.
// Never offered as an option.
extern "C" __global__ void k0(const float* __restrict__ x, const float* __restrict__ gamma,
                              const float* __restrict__ beta, float* __restrict__ y,
                              int R, int C, float eps)
{
    const int lane = threadIdx.x % 32;
    const int r = blockIdx.x * 8 + threadIdx.x / 32;
    if (r >= R) return;

    float v[32];
    float a = 0.0f, q = 0.0f;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        const int c = lane + 32 * j;
        v[j] = c < C ? x[r * C + c] : 0.0f;
        a += v[j];
        q += v[j] * v[j];
    }
    for (int o = 16; o > 0; o /= 2) {
        a += __shfl_xor_sync(0xffffffffu, a, o);
        q += __shfl_xor_sync(0xffffffffu, q, o);
    }
    const float mean = a / C;
    const float rstd = rsqrtf(q / C - mean * mean + eps);
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        const int c = lane + 32 * j;
        if (c < C) y[r * C + c] = (v[j] - mean) * rstd * gamma[c] + beta[c];
    }
}
