// One warp per row, eight rows per 256-thread block. Lane l holds columns
// l, l + 32, ..., l + 992 (C <= 1024) in registers; both statistics are summed
// with __shfl_xor_sync, with no shared memory and no block barrier.
extern "C" __global__ void k0(const float* __restrict__ x, const float* __restrict__ gamma,
                              const float* __restrict__ beta, float* __restrict__ y,
                              int R, int C, float eps)
{
    const int lane = threadIdx.x % 32;
    const int r = blockIdx.x * 8 + threadIdx.x / 32;
    if (r >= R) return;   // the whole warp leaves together

    float v[32];
    float a = 0.0f;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        const int c = lane + 32 * j;
        v[j] = c < C ? x[r * C + c] : 0.0f;
        a += v[j];
    }
    for (int o = 16; o > 0; o /= 2) a += __shfl_xor_sync(0xffffffffu, a, o);
    const float mean = a / C;

    a = 0.0f;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        v[j] = lane + 32 * j < C ? v[j] - mean : 0.0f;
        a += v[j] * v[j];
    }
    for (int o = 16; o > 0; o /= 2) a += __shfl_xor_sync(0xffffffffu, a, o);
    const float rstd = rsqrtf(a / C + eps);
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        const int c = lane + 32 * j;
        if (c < C) y[r * C + c] = v[j] * rstd * gamma[c] + beta[c];
    }
}
