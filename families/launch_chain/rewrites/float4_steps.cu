// Eight launches as before; each thread computes outputs 4t..4t+3 from one
// float4 and its two neighbours, and stores a float4. Past the last whole
// float4 the thread falls back to scalar code.
extern "C" __global__ void k0(const float* v, float* y,
                              int n, float c0, float c1, float c2)
{
    const int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n) return;
    if (i + 4 <= n) {
        const float a = i > 0 ? v[i - 1] : 0.0f;
        const float4 q = *reinterpret_cast<const float4*>(v + i);
        const float e = i + 4 < n ? v[i + 4] : 0.0f;
        float4 r;
        r.x = (c0 * a + c1 * q.x) + c2 * q.y;
        r.y = (c0 * q.x + c1 * q.y) + c2 * q.z;
        r.z = (c0 * q.y + c1 * q.z) + c2 * q.w;
        r.w = (c0 * q.z + c1 * q.w) + c2 * e;
        *reinterpret_cast<float4*>(y + i) = r;
    } else {
        for (int j = i; j < n; ++j)
            y[j] = (c0 * (j > 0 ? v[j - 1] : 0.0f) + c1 * v[j]) + c2 * (j + 1 < n ? v[j + 1] : 0.0f);
    }
}
