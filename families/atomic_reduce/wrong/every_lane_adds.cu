// WRONG ON PURPOSE: the grid-stride rewrite where every lane, not only lane 0,
// adds the warp total after the butterfly (each lane holds the full total), so
// the result is 32 times the sum. Never offered as an option.
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
    atomicAdd(out, s);
}
