// One launch. Block b owns outputs [2048b, 2048b + 2048). Its 256 threads load
// that range plus 8 values on each side into shared memory (nine loads per
// thread, all in flight together), then apply the eight steps there,
// ping-ponging between two shared buffers: step s updates window positions
// [s, W - s), the part still determined by the loaded values. Positions
// outside [0, n) are set to zero at every step.
extern "C" __global__ void k0(const float* x, float* out,
                              int n, float c0, float c1, float c2)
{
    constexpr int T = 2048;
    constexpr int H = 8;
    constexpr int W = T + 2 * H;
    constexpr int B = 256;  // threads per block, as launched
    __shared__ float buf[2][W];
    const int base = blockIdx.x * T - H;

    for (int k = 0; k < (W + B - 1) / B; ++k) {
        const int j = threadIdx.x + k * B;
        const int g = base + j;
        if (j < W) buf[0][j] = (g >= 0 && g < n) ? x[g] : 0.0f;
    }
    __syncthreads();
    for (int s = 1; s <= 8; ++s) {
        const float* src = buf[(s - 1) & 1];
        float* dst = buf[s & 1];
        for (int k = 0; k < (W + B - 1) / B; ++k) {
            const int j = threadIdx.x + k * B;
            const int g = base + j;
            const float v = (c0 * src[j - 1] + c1 * src[j]) + c2 * src[j + 1];
            if (j >= s && j < W - s) dst[j] = (g >= 0 && g < n) ? v : 0.0f;
        }
        __syncthreads();
    }
    for (int k = 0; k < T / B; ++k) {
        const int g = base + H + threadIdx.x + k * B;
        if (g < n) out[g] = buf[0][H + threadIdx.x + k * B];
    }
}
