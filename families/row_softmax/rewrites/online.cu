// Two launches. k0 makes one float4 pass per row keeping a running max and a
// sum rescaled whenever the max grows, then merges the 256 (max, sum) pairs in
// a shared-memory tree. k1 writes y = expf(x - m[r]) / s[r] with float4.
static __device__ __forceinline__ void merge(float& mx, float& sm, float m2, float s2)
{
    const float mm = fmaxf(mx, m2);
    // An empty pair is (-inf, 0); equal maxima need no rescaling.
    sm = (mx == mm ? sm : sm * expf(mx - mm)) + (m2 == mm ? s2 : s2 * expf(m2 - mm));
    mx = mm;
}

extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ m,
                              float* __restrict__ s, int C)
{
    __shared__ float shm[256];
    __shared__ float shs[256];
    const int t = threadIdx.x;
    const float4* row = reinterpret_cast<const float4*>(x + blockIdx.x * C);
    float mx = -__int_as_float(0x7f800000);
    float sm = 0.0f;
    for (int q = t; q < C / 4; q += 256) {
        const float4 f = row[q];
        const float fm = fmaxf(fmaxf(f.x, f.y), fmaxf(f.z, f.w));
        merge(mx, sm, fm, expf(f.x - fm) + expf(f.y - fm) + expf(f.z - fm) + expf(f.w - fm));
    }
    shm[t] = mx;
    shs[t] = sm;
    __syncthreads();
    for (int d = 128; d > 0; d /= 2) {
        if (t < d) {
            merge(mx, sm, shm[t + d], shs[t + d]);
            shm[t] = mx;
            shs[t] = sm;
        }
        __syncthreads();
    }
    if (t == 0) {
        m[blockIdx.x] = mx;
        s[blockIdx.x] = sm;
    }
}

extern "C" __global__ void k1(const float* __restrict__ x, const float* __restrict__ m,
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
