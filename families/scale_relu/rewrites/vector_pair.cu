// The same two launches; each thread of either kernel handles elements
// 4t .. 4t + 3 as one float4 (the family requires n % 4 == 0).
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ y, int n, float a)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n / 4) {
        const float4 v = reinterpret_cast<const float4*>(x)[t];
        reinterpret_cast<float4*>(y)[t] = make_float4(a * v.x, a * v.y, a * v.z, a * v.w);
    }
}

extern "C" __global__ void k1(const float* __restrict__ y, float* __restrict__ z, int n)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n / 4) {
        const float4 v = reinterpret_cast<const float4*>(y)[t];
        reinterpret_cast<float4*>(z)[t] = make_float4(fmaxf(v.x, 0.0f), fmaxf(v.y, 0.0f), fmaxf(v.z, 0.0f), fmaxf(v.w, 0.0f));
    }
}
