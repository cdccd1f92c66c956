// One launch. Block b owns outputs [2048b, 2048b + 2048). It loads that range
// plus 8 values on each side into shared memory, then applies the eight steps
// there, ping-ponging between two shared buffers. Step s updates window
// positions [s, W - s): the part still determined by the loaded values.
// Positions outside [0, n) are set to zero at every step.
extern "C" __global__ void k0(const float* x, float* out,
                              int n, float c0, float c1, float c2)
{
    constexpr int T = 2048;
    constexpr int H = 8;
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
