// WRONG ON PURPOSE: the row-in-registers kernel without the max subtraction.
// Mathematically equal, but expf overflows to inf on rows whose values are
// near +100 (make_inputs shifts every fourth row there). Never offered as an
// option.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ y, int C)
{
    __shared__ float sh[256];
    const int t = threadIdx.x;
    const float4* row = reinterpret_cast<const float4*>(x + blockIdx.x * C);
    const bool h0 = t < C / 4;
    const bool h1 = t + 256 < C / 4;
    float4 a = h0 ? row[t] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float4 b = h1 ? row[t + 256] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    a = make_float4(expf(a.x), expf(a.y), expf(a.z), expf(a.w));
    b = make_float4(expf(b.x), expf(b.y), expf(b.z), expf(b.w));
    sh[t] = (h0 ? a.x + a.y + a.z + a.w : 0.0f) + (h1 ? b.x + b.y + b.z + b.w : 0.0f);
    __syncthreads();
    for (int d = 128; d > 0; d /= 2) {
        if (t < d) sh[t] += sh[t + d];
        __syncthreads();
    }
    const float sr = sh[0];

    float4* out = reinterpret_cast<float4*>(y + blockIdx.x * C);
    if (h0) out[t] = make_float4(a.x / sr, a.y / sr, a.z / sr, a.w / sr);
    if (h1) out[t + 256] = make_float4(b.x / sr, b.y / sr, b.z / sr, b.w / sr);
}
