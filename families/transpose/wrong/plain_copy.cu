// WRONG ON PURPOSE: the [32][33] tile kernel whose write phase keeps the read
// phase's indices, so it writes a plain row-major copy of x instead of its
// transpose. In bounds (out has H * W elements). Never offered as an option.
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
        if (r0 + ty + j < H && c0 + tx < W) out[(r0 + ty + j) * W + c0 + tx] = tile[ty + j][tx];
}
