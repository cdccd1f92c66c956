// The [32][32] tile with 32x8 blocks: each thread loads tile rows ty + 8k and
// stores the elements base + tx * 32 + ty + 8k, k = 0..3.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    __shared__ float tile[32][32];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int base = blockIdx.x * 1024;

    for (int r = ty; r < 32; r += 8)
        if (base + r * 32 + tx < n) tile[r][tx] = x[base + r * 32 + tx];
    __syncthreads();
    for (int r = ty; r < 32; r += 8)
        if (base + tx * 32 + r < n) out[base + tx * 32 + r] = tile[tx][r];
}
