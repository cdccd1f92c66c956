// WRONG ON PURPOSE: the shared-window rewrite with a 7-value halo. After
// eight steps only [8, W - 8) is determined, so the first and last output of
// every 2048-wide tile keep a value from step 6. Never offered as an option.
extern "C" __global__ void k0(const float* x, float* out,
                              int n, float c0, float c1, float c2)
{
    constexpr int T = 2048;
    constexpr int H = 7;
    constexpr int W = T + 2 * H;
    __shared__ float buf[2][W];
    const int base = blockIdx.x * T - H;

    for (int j = threadIdx.x; j < W; j += blockDim.x) {
        const int g = base + j;
        buf[0][j] = (g >= 0 && g < n) ? x[g] : 0.0f;
    }
    __syncthreads();
    for (int s = 1; s <= 8; ++s) {
        const float* src = buf[(s - 1) & 1];
        float* dst = buf[s & 1];
        for (int j = s + threadIdx.x; j < W - s; j += blockDim.x) {
            const int g = base + j;
            dst[j] = (g >= 0 && g < n) ? (c0 * src[j - 1] + c1 * src[j]) + c2 * src[j + 1] : 0.0f;
        }
        __syncthreads();
    }
    for (int j = H + threadIdx.x; j < H + T; j += blockDim.x) {
        const int g = base + j;
        if (g < n) out[g] = buf[0][j];
    }
}
