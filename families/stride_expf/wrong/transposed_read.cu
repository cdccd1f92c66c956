// WRONG ON PURPOSE: the swapped-grid kernel reading x[col * R + row], as if x
// were stored column-major: in bounds, but wrong wherever col * R + row differs
// from row * C + col. Never offered as an option.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ y, int R, int C)
{
    const int row = blockIdx.y * blockDim.x + threadIdx.x;
    const int col = blockIdx.x;
    if (row < R) y[row * C + col] = expf(x[col * R + row]);
}
