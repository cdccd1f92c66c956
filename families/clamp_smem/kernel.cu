// Clamp each element to [lo, hi]. The block is 32x32 and owns 1024 consecutive
// elements; each thread parks its element in a shared tile, then clamps it in
// place there 32 times, reading and writing the tile with a barrier on every
// pass, and finally stores it from the tile.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out,
                              long long n, float lo, float hi)
{
    __shared__ float tile[32][32];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const long long g = (long long)blockIdx.x * 1024 + ty * 32 + tx;

    tile[tx][ty] = g < n ? x[g] : 0.0f;
    __syncthreads();
    for (int it = 0; it < 32; ++it) {
        tile[tx][ty] = fminf(fmaxf(tile[tx][ty], lo), hi);
        __syncthreads();
    }
    if (g < n) out[g] = tile[tx][ty];
}
