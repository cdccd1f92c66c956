// D pull_quad: four lanes per row, eight rows per warp. Each lane strides the row by 4, a
// two-step shuffle within the four lanes sums the partials and lane 0 of the four writes y.
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
    s += __shfl_down_sync(0xffffffffu, s, 2, 4);       // every lane reaches both shuffles
    s += __shfl_down_sync(0xffffffffu, s, 1, 4);
    if (q == 0 && g < n) y[g] = s;
}
