// WRONG ON PURPOSE: the direct copy with the bound written t < n - 1, so the
// last element is never written. Never offered as an option.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n - 1) out[t] = x[t];
}
