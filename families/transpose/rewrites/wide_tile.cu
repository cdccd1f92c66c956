// The tile goes through shared memory declared [32][33]: rows of x are read
// into tile rows, and after the barrier tile columns are written as rows of out.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int H, int W)
{
    __shared__ float tile[32][33];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int c0 = blockIdx.x * 32;
    const int r0 = blockIdx.y * 32;
    for (int j = 0; j < 32; j += 8)
        if (r0 + ty + j < H && c0 + tx < W) tile[ty + j][tx] = x[(r0 + ty + j) * W + c0 + tx];
    __syncthreads();
    for (int j = 0; j < 32; j += 8)
        if (c0 + ty + j < W && r0 + tx < H) out[(c0 + ty + j) * H + r0 + tx] = tile[tx][ty + j];
}
