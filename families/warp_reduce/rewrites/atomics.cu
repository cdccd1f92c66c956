// Each lane adds its value into sum[g] with atomicAdd and raises absmax[g] with
// atomicMax on the bits of |v| (non-negative floats order like their bits).
// Both outputs are zeroed before the launch.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ sum,
                              float* __restrict__ absmax, int n)
{
    const int t = threadIdx.x;
    const int i = blockIdx.x * 256 + t;
    if (i >= n) return;

    const float v = x[i];
    atomicAdd(&sum[i / 32], v);
    atomicMax(reinterpret_cast<unsigned int*>(&absmax[i / 32]), __float_as_uint(fabsf(v)));
}
