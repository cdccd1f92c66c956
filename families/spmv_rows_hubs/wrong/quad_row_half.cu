// WRONG ON PURPOSE: quad_row with one shuffle step instead of two, so lane 0
// writes the partial sums of lanes 0 and 2 only: the nonzeros at positions
// 1 and 3 (mod 4) of every row are lost. Never offered as an option.
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
    if (q == 0 && g < rows) y[g] = s;
}
