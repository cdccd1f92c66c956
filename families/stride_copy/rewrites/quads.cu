// The stride-8 walk over floats becomes a stride-2 walk over float4 units
// u = (t % R) * 2 + t / R with R = ceil(ceil(n / 4) / 2); each thread moves
// elements 4u .. 4u + 3, or those of them below n for the last unit.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    const int R = ((n + 3) / 4 + 1) / 2;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int u = (t % R) * 2 + t / R;
    if (t < 2 * R && 4 * u + 3 < n) {
        reinterpret_cast<float4*>(out)[u] = reinterpret_cast<const float4*>(x)[u];
    } else if (t < 2 * R) {
        for (int j = 4 * u; j < n; ++j) out[j] = x[j];
    }
}
