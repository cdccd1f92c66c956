// A grid of four 256-thread blocks per SM; each thread sums every
// (gridDim.x * blockDim.x)-th float4 in a register, the first n % 4 threads
// add one tail element each, a butterfly of __shfl_xor_sync sums the warp,
// and lane 0 adds the warp's total.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float s = 0.0f;
    for (int i = g; i < n / 4; i += gridDim.x * blockDim.x) {
        const float4 v = x4[i];
        s += (v.x + v.y) + (v.z + v.w);
    }
    if (g < n % 4) s += x[n - n % 4 + g];
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, s);
}
