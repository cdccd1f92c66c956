// 31-tap 1-D convolution with zero padding: y[i] = sum_k w[k] * x[i + k - 15].
// One output per thread; every tap loads its input and its weight from global
// memory (both hit in L1 after the first warps).
extern "C" __global__ void k0(const float* __restrict__ x, const float* __restrict__ w,
                              float* __restrict__ y, int n)
{
    const int i = blockIdx.x * 256 + threadIdx.x;
    if (i >= n) return;

    float acc = 0.0f;
    for (int k = 0; k < 31; ++k) {
        const int j = i + k - 15;
        if (j >= 0 && j < n) acc += w[k] * x[j];
    }
    y[i] = acc;
}
