// The three launches of the start, each reading (and k2 writing) the row as
// float4 quads; C % 4 == 0 keeps every row 16-byte aligned.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ m, int C)
{
    __shared__ float sh[256];
    const int t = threadIdx.x;
    const float4* row = reinterpret_cast<const float4*>(x + blockIdx.x * C);
    float v = -__int_as_float(0x7f800000);
    for (int q = t; q < C / 4; q += 256) {
        const float4 f = row[q];
        v = fmaxf(fmaxf(v, fmaxf(f.x, f.y)), fmaxf(f.z, f.w));
    }
    sh[t] = v;
    __syncthreads();
    for (int d = 128; d > 0; d /= 2) {
        if (t < d) sh[t] = fmaxf(sh[t], sh[t + d]);
        __syncthreads();
    }
    if (t == 0) m[blockIdx.x] = sh[0];
}

extern "C" __global__ void k1(const float* __restrict__ x, const float* __restrict__ m,
                              float* __restrict__ s, int C)
{
    __shared__ float sh[256];
    const int t = threadIdx.x;
    const float4* row = reinterpret_cast<const float4*>(x + blockIdx.x * C);
    const float mr = m[blockIdx.x];
    float v = 0.0f;
    for (int q = t; q < C / 4; q += 256) {
        const float4 f = row[q];
        v += expf(f.x - mr) + expf(f.y - mr) + expf(f.z - mr) + expf(f.w - mr);
    }
    sh[t] = v;
    __syncthreads();
    for (int d = 128; d > 0; d /= 2) {
        if (t < d) sh[t] += sh[t + d];
        __syncthreads();
    }
    if (t == 0) s[blockIdx.x] = sh[0];
}

extern "C" __global__ void k2(const float* __restrict__ x, const float* __restrict__ m,
                              const float* __restrict__ s, float* __restrict__ y, int C)
{
    const int t = threadIdx.x;
    const float4* row = reinterpret_cast<const float4*>(x + blockIdx.x * C);
    float4* out = reinterpret_cast<float4*>(y + blockIdx.x * C);
    const float mr = m[blockIdx.x];
    const float sr = s[blockIdx.x];
    for (int q = t; q < C / 4; q += 256) {
        const float4 f = row[q];
        out[q] = make_float4(expf(f.x - mr) / sr, expf(f.y - mr) / sr,
                             expf(f.z - mr) / sr, expf(f.w - mr) / sr);
    }
}
