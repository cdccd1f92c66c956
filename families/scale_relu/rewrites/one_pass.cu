// One launch: thread t handles elements t + k * T, k = 0..3, with T the number
// of threads in the grid, and writes the ReLU of the scaled value to z.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ z, int n, float a)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int T = gridDim.x * blockDim.x;
    for (int k = 0; k < 4; ++k) {
        const int i = t + k * T;
        if (i < n) z[i] = fmaxf(a * x[i], 0.0f);
    }
}
