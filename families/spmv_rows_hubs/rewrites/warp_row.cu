// One warp per row, eight rows per 256-thread block: lane l takes the row's
// nonzeros l, l + 32, ... and a five-step shuffle reduction sums the 32
// partial sums; lane 0 writes y. Every lane of a warp reaches the shuffles
// (a warp past the last row adds nothing and writes nothing).
extern "C" __global__ void k0(const int* __restrict__ rowptr, const int* __restrict__ col,
                              const float* __restrict__ val, const float* __restrict__ x,
                              float* __restrict__ y, int rows)
{
    const int r = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    float s = 0.f;
    if (r < rows) {
        const int end = rowptr[r + 1];
        for (int k = rowptr[r] + lane; k < end; k += 32) s += val[k] * x[col[k]];
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (lane == 0 && r < rows) y[r] = s;
}
