// Wrong: pull_quad with only the second shuffle step: lane 0 of each four adds lane 1's
// partial but never lanes 2 and 3's, so every row loses the entries q = 2 and 3 (mod 4).
extern "C" __global__ void k0(const int* __restrict__ rowptr, const int* __restrict__ col,
                              const float* __restrict__ val, const float* __restrict__ x,
                              float* __restrict__ y, int n)
{
    const int g = (blockIdx.x * blockDim.x + threadIdx.x) >> 2, q = threadIdx.x & 3;
    float s = 0.f;
    if (g < n) {
        const int end = rowptr[g + 1];
#pragma unroll 4
        for (int k = rowptr[g] + q; k < end; k += 4) s += val[k] * x[col[k]];
    }
    s += __shfl_down_sync(0xffffffffu, s, 1, 4);
    if (q == 0 && g < n) y[g] = s;
}
