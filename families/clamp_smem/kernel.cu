// Clamp each element to [lo, hi]. The block is 32x32 and owns 1024 consecutive
// elements; each thread parks its element in a shared tile, then reads it back
// 32 times with a barrier on every iteration.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out,
                              long long n, float lo, float hi)
{
    __shared__ float tile[32][32];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const long long g = (long long)blockIdx.x * 1024 + ty * 32 + tx;

    float v = 0.0f;
    if (g < n) v = x[g];
    tile[tx][ty] = v;
    __syncthreads();
    for (int it = 0; it < 32; ++it) {
        v = fminf(fmaxf(tile[tx][ty], lo), hi);
        __syncthreads();
    }
    if (g < n) out[g] = v;
}
