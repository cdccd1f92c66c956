// Each block copies the 31 weights into shared memory once; the tap loop reads
// weights from there and inputs from global memory as before.
extern "C" __global__ void k0(const float* __restrict__ x, const float* __restrict__ w,
                              float* __restrict__ y, int n)
{
    __shared__ float ws[31];
    if (threadIdx.x < 31) ws[threadIdx.x] = w[threadIdx.x];
    __syncthreads();

    const int i = blockIdx.x * 256 + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < 31; ++k) {
        const int j = i + k - 15;
        if (j >= 0 && j < n) acc += ws[k] * x[j];
    }
    y[i] = acc;
}
