// Direct transpose with 32x8 blocks over 128-column x 32-row tiles: lanes sit
// four columns apart, so a warp reads 512 contiguous bytes of a row as 32
// float4s (W % 4 == 0 keeps each one aligned and whole); each thread then
// writes its four values to output rows c .. c + 3, looping over four rows
// like the starting kernel.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int H, int W)
{
    const int c = blockIdx.x * 128 + threadIdx.x * 4;
    const int r0 = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8) {
        const int r = r0 + j;
        if (r < H && c < W) {
            const float4 v = *reinterpret_cast<const float4*>(x + r * W + c);
            out[c * H + r] = v.x;
            out[(c + 1) * H + r] = v.y;
            out[(c + 2) * H + r] = v.z;
            out[(c + 3) * H + r] = v.w;
        }
    }
}
