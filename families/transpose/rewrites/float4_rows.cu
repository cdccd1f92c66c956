// Direct transpose with 8x32 blocks over the same 32x32 tiles: each thread
// reads x[r][c .. c + 3] as one float4 (W % 4 == 0 keeps it aligned and whole)
// and writes the four values to output rows c .. c + 3.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int H, int W)
{
    const int c = blockIdx.x * 32 + threadIdx.x * 4;
    const int r = blockIdx.y * 32 + threadIdx.y;
    if (r < H && c < W) {
        const float4 v = *reinterpret_cast<const float4*>(x + r * W + c);
        out[c * H + r] = v.x;
        out[(c + 1) * H + r] = v.y;
        out[(c + 2) * H + r] = v.z;
        out[(c + 3) * H + r] = v.w;
    }
}
