// Same column-per-blockIdx.y order; a 1024-thread block covers 4096 rows of its
// column, each thread handling rows base + k * 1024 + tx, k = 0..3.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ y, int R, int C)
{
    const int col = blockIdx.y;
    for (int k = 0; k < 4; ++k) {
        const int row = (blockIdx.x * 4 + k) * blockDim.x + threadIdx.x;
        const int i = row * C + col;
        if (row < R) y[i] = expf(x[i]);
    }
}
