// Each block stages its 256 inputs plus a 15-value halo on each side (zero
// outside x) and the 31 weights in shared memory; one output per thread, and
// every tap reads both operands from the tiles.
extern "C" __global__ void k0(const float* __restrict__ x, const float* __restrict__ w,
                              float* __restrict__ y, int n)
{
    __shared__ float tile[256 + 30];
    __shared__ float ws[31];
    const int first = blockIdx.x * 256 - 15;
    for (int s = threadIdx.x; s < 256 + 30; s += 256) {
        const int j = first + s;
        tile[s] = (j >= 0 && j < n) ? x[j] : 0.0f;
    }
    if (threadIdx.x < 31) ws[threadIdx.x] = w[threadIdx.x];
    __syncthreads();

    const int i = blockIdx.x * 256 + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < 31; ++k) acc += ws[k] * tile[threadIdx.x + k];
    y[i] = acc;
}
