// One thread per row, 32-thread blocks; float4 reads through __ldg feed four
// independent partial sums, combined at the end.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int R, int C)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    const float4* row = reinterpret_cast<const float4*>(x + (long long)r * C);
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    for (int c = 0; c < C / 4; ++c) {
        const float4 v = __ldg(row + c);
        s0 += v.x;
        s1 += v.y;
        s2 += v.z;
        s3 += v.w;
    }
    out[r] = (s0 + s1) + (s2 + s3);
}
