// y = A x for a CSR matrix: one thread per row walks its row's nonzeros.
// Lanes of a warp walk 32 neighbouring rows side by side, so each load of the
// loop touches a different part of col and val per lane, and a warp runs as
// long as its longest row.
extern "C" __global__ void k0(const int* __restrict__ rowptr, const int* __restrict__ col,
                              const float* __restrict__ val, const float* __restrict__ x,
                              float* __restrict__ y, int rows)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.f;
    for (int k = rowptr[r]; k < rowptr[r + 1]; ++k) s += val[k] * x[col[k]];
    y[r] = s;
}
