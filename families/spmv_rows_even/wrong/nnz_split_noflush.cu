// WRONG ON PURPOSE: nnz_split without the atomicAdd after the segmented
// sum, so every row's partial sum that reaches the end of a thread's four
// nonzeros is lost; only the partial sums flushed inside the loop reach y.
// Never offered as an option.
extern "C" __global__ void k0(const int* __restrict__ rowptr, const int* __restrict__ col,
                              const float* __restrict__ val, const float* __restrict__ x,
                              float* __restrict__ y, int rows)
{
    const int nnz = rowptr[rows];
    const int lane = threadIdx.x & 31;
    const int first = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
    int r = -1;
    float s = 0.f;
    if (first < nnz) {
        const int last = min(first + 4, nnz);
        int lo = 0, hi = rows;
        while (hi - lo > 1) {
            const int m = (lo + hi) >> 1;
            if (rowptr[m] <= first) lo = m; else hi = m;
        }
        r = lo;
        int next = rowptr[r + 1];
        for (int k = first; k < last; ++k) {
            while (k >= next) {
                atomicAdd(&y[r], s);
                s = 0.f;
                ++r;
                next = rowptr[r + 1];
            }
            s += val[k] * x[col[k]];
        }
    }
    for (int o = 1; o < 32; o <<= 1) {
        const float v = __shfl_down_sync(0xffffffffu, s, o);
        const int rv = __shfl_down_sync(0xffffffffu, r, o);
        if (lane + o < 32 && rv == r) s += v;
    }
}
