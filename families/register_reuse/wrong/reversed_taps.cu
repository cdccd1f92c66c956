// WRONG ON PURPOSE: applies the taps in reverse (w[30 - k]); the weights are
// asymmetric, so every output is wrong. Never offered as an option.
extern "C" __global__ void k0(const float* __restrict__ x, const float* __restrict__ w,
                              float* __restrict__ y, int n)
{
    const int i = blockIdx.x * 256 + threadIdx.x;
    if (i >= n) return;

    float acc = 0.0f;
    for (int k = 0; k < 31; ++k) {
        const int j = i + k - 15;
        if (j >= 0 && j < n) acc += w[30 - k] * x[j];
    }
    y[i] = acc;
}
