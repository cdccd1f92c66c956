// WRONG ON PURPOSE: the register window is read one position early
// (v[o + k] instead of v[o + k + 1]), so every output is the convolution
// centred on its left neighbour. Never offered as an option.
extern "C" __global__ void k0(const float* __restrict__ x, const float* __restrict__ w,
                              float* __restrict__ y, int n)
{
    const int t = blockIdx.x * 256 + threadIdx.x;
    if (8 * t >= n) return;

    float v[40];
#pragma unroll
    for (int q = 0; q < 10; ++q) {
        const int j = 8 * t - 16 + 4 * q;
        const float4 f = (j >= 0 && j < n) ? *reinterpret_cast<const float4*>(x + j)
                                           : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        v[4 * q] = f.x; v[4 * q + 1] = f.y; v[4 * q + 2] = f.z; v[4 * q + 3] = f.w;
    }
    float acc[8] = {};
#pragma unroll
    for (int k = 0; k < 31; ++k) {
        const float c = w[k];
#pragma unroll
        for (int o = 0; o < 8; ++o) acc[o] += c * v[o + k];
    }
    reinterpret_cast<float4*>(y)[2 * t] = make_float4(acc[0], acc[1], acc[2], acc[3]);
    if (8 * t + 4 < n)
        reinterpret_cast<float4*>(y)[2 * t + 1] = make_float4(acc[4], acc[5], acc[6], acc[7]);
}
