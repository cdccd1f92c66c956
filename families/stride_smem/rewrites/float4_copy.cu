// No tile: thread t copies elements 4t .. 4t + 3 as one float4; the first
// n % 4 threads then copy the scalar remainder after the last whole float4.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = n / 4;

    if (t < m) reinterpret_cast<float4*>(out)[t] = reinterpret_cast<const float4*>(x)[t];
    if (t < n - 4 * m) out[4 * m + t] = x[4 * m + t];
}
