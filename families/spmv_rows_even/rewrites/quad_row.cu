// Four lanes per row, eight rows per warp: lane q of a group takes the row's
// nonzeros q, q + 4, ... and two shuffles within the group of four sum the
// partial sums; lane q == 0 writes y. Every lane reaches both shuffles.
extern "C" __global__ void k0(const int* __restrict__ rowptr, const int* __restrict__ col,
                              const float* __restrict__ val, const float* __restrict__ x,
                              float* __restrict__ y, int rows)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int g = t >> 2, q = t & 3;
    float s = 0.f;
    if (g < rows) {
        const int end = rowptr[g + 1];
        for (int k = rowptr[g] + q; k < end; k += 4) s += val[k] * x[col[k]];
    }
    s += __shfl_down_sync(0xffffffffu, s, 2, 4);
    s += __shfl_down_sync(0xffffffffu, s, 1, 4);
    if (q == 0 && g < rows) y[g] = s;
}
