// The stride-8 walk over floats becomes a stride-4 walk over float2 units
// u = (t % R) * 4 + t / R with R = ceil(ceil(n / 2) / 4); each thread moves
// elements 2u and 2u + 1, or only 2u when it is the last element of an odd n.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    const int R = ((n + 1) / 2 + 3) / 4;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int u = (t % R) * 4 + t / R;
    if (t < 4 * R && 2 * u + 1 < n) {
        reinterpret_cast<float2*>(out)[u] = reinterpret_cast<const float2*>(x)[u];
    } else if (t < 4 * R && 2 * u < n) {
        out[2 * u] = x[2 * u];
    }
}
