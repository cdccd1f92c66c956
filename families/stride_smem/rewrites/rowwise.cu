// The same tile, barrier and launch; the read-back follows the load order, so
// each thread stores element base + ty * 32 + tx from tile[ty][tx].
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    __shared__ float tile[32][32];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int base = blockIdx.x * 1024;

    if (base + ty * 32 + tx < n) tile[ty][tx] = x[base + ty * 32 + tx];
    __syncthreads();
    if (base + ty * 32 + tx < n) out[base + ty * 32 + tx] = tile[ty][tx];
}
