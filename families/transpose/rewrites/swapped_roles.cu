// Direct transpose with the thread roles swapped: threadIdx.x runs along r, so
// a warp reads down a column of x and writes along a row of out.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int H, int W)
{
    const int r = blockIdx.y * 32 + threadIdx.x;
    const int c0 = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8) {
        const int c = c0 + j;
        if (r < H && c < W) out[c * H + r] = x[r * W + c];
    }
}
