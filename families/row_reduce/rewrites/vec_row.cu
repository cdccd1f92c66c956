// One thread per row, 128-thread blocks; the row is read as float4 (C % 4 == 0).
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int R, int C)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    const float4* row = reinterpret_cast<const float4*>(x + (long long)r * C);
    float s = 0.0f;
    for (int c = 0; c < C / 4; ++c) {
        const float4 v = row[c];
        s += (v.x + v.y) + (v.z + v.w);
    }
    out[r] = s;
}
