// Copy n floats through a shared tile. A 32x32 block owns the 1024-element
// segment at base; it loads row-major into tile[ty][tx], synchronizes, and each
// thread then stores element base + tx * 32 + ty from tile[tx][ty].
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    __shared__ float tile[32][32];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int base = blockIdx.x * 1024;

    if (base + ty * 32 + tx < n) tile[ty][tx] = x[base + ty * 32 + tx];
    __syncthreads();
    if (base + tx * 32 + ty < n) out[base + tx * 32 + ty] = tile[tx][ty];
}
