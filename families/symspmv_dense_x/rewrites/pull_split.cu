// B pull_split: two launches. k0 writes every product val[k] * x[col[k]] to prod (nnz floats,
// one per thread); k1 sums each row's products with four lanes per row, as pull_quad does.
extern "C" __global__ void k0(const int* __restrict__ col, const float* __restrict__ val,
                              const float* __restrict__ x, float* __restrict__ prod, int n, int deg)
{
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < deg * n) prod[k] = val[k] * x[col[k]];
}

extern "C" __global__ void k1(const int* __restrict__ rowptr, const float* __restrict__ prod,
                              float* __restrict__ y, int n)
{
    const int g = (blockIdx.x * blockDim.x + threadIdx.x) >> 2, q = threadIdx.x & 3;
    float s = 0.f;
    if (g < n) {
        const int end = rowptr[g + 1];
#pragma unroll 4
        for (int k = rowptr[g] + q; k < end; k += 4) s += prod[k];
    }
    s += __shfl_down_sync(0xffffffffu, s, 2, 4);       // every lane reaches both shuffles
    s += __shfl_down_sync(0xffffffffu, s, 1, 4);
    if (q == 0 && g < n) y[g] = s;
}
