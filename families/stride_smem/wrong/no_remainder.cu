// WRONG ON PURPOSE: the float4 copy without the scalar remainder, so the last
// n % 4 elements stay unwritten. Never offered as an option.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = n / 4;

    if (t < m) reinterpret_cast<float4*>(out)[t] = reinterpret_cast<const float4*>(x)[t];
}
