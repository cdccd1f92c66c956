// The two kernels fused into one persistent launch: four 256-thread blocks
// per SM, each thread looping over the array with a grid stride and writing
// max(a * x[i], 0) straight to z. ptxas keeps the loop rolled: one load per
// pass, and the multiply waits for it before the store and the next pass.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ z, int n, float a)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        z[i] = fmaxf(a * x[i], 0.0f);
}
