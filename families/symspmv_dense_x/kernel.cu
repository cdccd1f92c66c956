// Start: push. One thread per column j; a column whose x[j] is zero returns at once. A is
// symmetric, so column j is row j: thread j walks row j and adds val * x[j] to y at each of
// its columns with atomicAdd (y is zeroed before the launch). The lanes of a warp walk 32
// different rows, so each load and each atomic touches a different row's entries.
extern "C" __global__ void k0(const int* __restrict__ rowptr, const int* __restrict__ col,
                              const float* __restrict__ val, const float* __restrict__ x,
                              float* __restrict__ y, int n)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    const float xj = x[j];
    if (xj == 0.f) return;
    for (int k = rowptr[j]; k < rowptr[j + 1]; ++k) atomicAdd(&y[col[k]], val[k] * xj);
}
