// 32x4 blocks, each owning 128 consecutive elements; the tile and its
// tile[tx][ty] indexing are unchanged.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out,
                              long long n, float lo, float hi)
{
    __shared__ float tile[32][32];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const long long g = (long long)blockIdx.x * 128 + ty * 32 + tx;

    tile[tx][ty] = g < n ? x[g] : 0.0f;
    __syncthreads();
    for (int it = 0; it < 32; ++it) {
        tile[tx][ty] = fminf(fmaxf(tile[tx][ty], lo), hi);
        __syncthreads();
    }
    if (g < n) out[g] = tile[tx][ty];
}
