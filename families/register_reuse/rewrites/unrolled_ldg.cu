// One output per thread; the 31-tap loop is fully unrolled and every input
// and weight goes through the read-only data path (__ldg).
extern "C" __global__ void k0(const float* __restrict__ x, const float* __restrict__ w,
                              float* __restrict__ y, int n)
{
    const int i = blockIdx.x * 256 + threadIdx.x;
    if (i >= n) return;

    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < 31; ++k) {
        const int j = i + k - 15;
        if (j >= 0 && j < n) acc += __ldg(&w[k]) * __ldg(&x[j]);
    }
    y[i] = acc;
}
