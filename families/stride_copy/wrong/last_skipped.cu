// WRONG ON PURPOSE: the contiguous rewrite with the bound written j < n - 1,
// so the last element is never written. Never offered as an option.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < 4; ++k) {
        const int j = 4 * t + k;
        if (j < n - 1) out[j] = x[j];
    }
}
