// The same [32][32] tile, barrier, launch and store order, with the tile's
// columns XOR-swizzled by row: element (r, c) lives at tile[r][c ^ r]. The
// read-back tile[tx][ty ^ tx] then has the 32 lanes of a warp in 32 different
// banks; each thread still stores element base + tx * 32 + ty.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    __shared__ float tile[32][32];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int base = blockIdx.x * 1024;

    if (base + ty * 32 + tx < n) tile[ty][tx ^ ty] = x[base + ty * 32 + tx];
    __syncthreads();
    if (base + tx * 32 + ty < n) out[base + tx * 32 + ty] = tile[tx][ty ^ tx];
}
