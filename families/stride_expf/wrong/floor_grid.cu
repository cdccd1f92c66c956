// WRONG ON PURPOSE: the flat kernel, launched with floor(R * C / 256) blocks
// (see family.toml), so the last R * C % 256 elements stay unwritten.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ y, int R, int C)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < R * C) y[i] = expf(x[i]);
}
