// Row softmax in three launches, one 256-thread block per row in each:
// k0 writes the row max m[r], k1 the row sum s[r] of expf(x - m[r]), and k2
// writes y = expf(x - m[r]) / s[r]. Each launch reads the whole row of x again.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ m, int C)
{
    __shared__ float sh[256];
    const int t = threadIdx.x;
    const float* row = x + blockIdx.x * C;
    float v = -__int_as_float(0x7f800000);
    for (int c = t; c < C; c += 256) v = fmaxf(v, row[c]);
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
    const float* row = x + blockIdx.x * C;
    const float mr = m[blockIdx.x];
    float v = 0.0f;
    for (int c = t; c < C; c += 256) v += expf(row[c] - mr);
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
    const float* row = x + blockIdx.x * C;
    const float mr = m[blockIdx.x];
    const float sr = s[blockIdx.x];
    for (int c = t; c < C; c += 256) y[blockIdx.x * C + c] = expf(row[c] - mr) / sr;
}
