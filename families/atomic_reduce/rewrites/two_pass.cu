// Two launches and no atomics. k0: each 256-thread block sums its 256 elements
// in a shared-memory tree (sh[t] += sh[t + s]) and writes the total to
// part[blockIdx.x]. k1: one 1024-thread block sums the cdiv(n, 256) partial
// sums (a strided loop per thread, then the same tree) and writes out[0].
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ part, int n)
{
    __shared__ float sh[256];
    const int t = threadIdx.x;
    const int i = blockIdx.x * blockDim.x + t;
    sh[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if (t < s) sh[t] += sh[t + s];
        __syncthreads();
    }
    if (t == 0) part[blockIdx.x] = sh[0];
}

extern "C" __global__ void k1(const float* __restrict__ part, float* __restrict__ out, int n)
{
    __shared__ float sh[1024];
    const int t = threadIdx.x;
    const int m = (n + 255) / 256;
    float s = 0.0f;
    for (int i = t; i < m; i += 1024)
        s += part[i];
    sh[t] = s;
    __syncthreads();
    for (int h = 512; h > 0; h >>= 1) {
        if (t < h) sh[t] += sh[t + h];
        __syncthreads();
    }
    if (t == 0) out[0] = sh[0];
}
