// WRONG ON PURPOSE: the row-wise store takes tile[tx][ty], the element at
// the transposed position, so each whole 32x32 segment comes out transposed.
// Never offered as an option.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    __shared__ float tile[32][32];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int base = blockIdx.x * 1024;

    if (base + ty * 32 + tx < n) tile[ty][tx] = x[base + ty * 32 + tx];
    __syncthreads();
    if (base + ty * 32 + tx < n) out[base + ty * 32 + tx] = tile[tx][ty];
}
