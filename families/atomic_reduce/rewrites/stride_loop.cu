// A grid of four 256-thread blocks per SM; each thread sums every
// (gridDim.x * blockDim.x)-th float4 in a register. Each pass of the loop reads
// four float4s, a grid stride apart, before adding any of them, so four loads
// are in flight per thread; a second loop takes the last float4s one at a
// time. The first n % 4 threads add one tail element each, a butterfly of
// __shfl_xor_sync sums the warp, and lane 0 adds the warp's total.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    const int T = gridDim.x * blockDim.x;
    const int m = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float s = 0.0f;
    int i = g;
    for (; i + 3 * T < m; i += 4 * T) {
        const float4 a = x4[i];
        const float4 b = x4[i + T];
        const float4 c = x4[i + 2 * T];
        const float4 d = x4[i + 3 * T];
        s += ((a.x + a.y) + (a.z + a.w)) + ((b.x + b.y) + (b.z + b.w))
           + (((c.x + c.y) + (c.z + c.w)) + ((d.x + d.y) + (d.z + d.w)));
    }
    for (; i < m; i += T) {
        const float4 v = x4[i];
        s += (v.x + v.y) + (v.z + v.w);
    }
    if (g < n % 4) s += x[n - n % 4 + g];
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, s);
}
