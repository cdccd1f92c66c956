// WRONG ON PURPOSE: the flat kernel, launched with floor(R * C / 1024) blocks
// (see family.toml), so the last R * C % 1024 elements stay unwritten.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ y, int R, int C)
{
    const int n = R * C;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int T = gridDim.x * blockDim.x;
    for (int k = 0; k < 4; ++k) {
        const int i = t + k * T;
        if (i < n) y[i] = expf(x[i]);
    }
}
