// out = transpose(x) for an H x W row-major x (out is W x H). A 32x8 block owns
// a 32x32 tile and each thread handles four of its rows: it reads x[r][c]
// along a row and writes it straight to out[c][r], so a warp's 32 stores land
// in 32 different output rows.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int H, int W)
{
    const int c = blockIdx.x * 32 + threadIdx.x;
    const int r0 = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8) {
        const int r = r0 + j;
        if (r < H && c < W) out[c * H + r] = x[r * W + c];
    }
}
