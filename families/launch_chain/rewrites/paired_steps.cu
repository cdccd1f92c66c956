// Four launches, each applying two steps. A 256-thread block loads its 256
// values plus 2 on each side into shared memory, computes the intermediate
// step on 258 positions, then the second step on its own 256.
extern "C" __global__ void k0(const float* v, float* y,
                              int n, float c0, float c1, float c2)
{
    constexpr int T = 256;
    __shared__ float a[T + 4];
    __shared__ float b[T + 2];
    const int t = threadIdx.x;
    const int base = blockIdx.x * T - 2;

    for (int j = t; j < T + 4; j += T) {
        const int g = base + j;
        a[j] = (g >= 0 && g < n) ? v[g] : 0.0f;
    }
    __syncthreads();
    for (int j = t; j < T + 2; j += T) {
        const int g = base + 1 + j;
        b[j] = (g >= 0 && g < n) ? (c0 * a[j] + c1 * a[j + 1]) + c2 * a[j + 2] : 0.0f;
    }
    __syncthreads();
    const int g = base + 2 + t;
    if (g < n) y[g] = (c0 * b[t] + c1 * b[t + 1]) + c2 * b[t + 2];
}
