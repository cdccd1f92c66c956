// WRONG ON PURPOSE: row_loop without the loop over a row's last 0-3
// nonzeros, so every row whose length is not a multiple of 4 loses its last
// terms. Never offered as an option.
extern "C" __global__ void k0(const int* __restrict__ rowptr, const int* __restrict__ col,
                              const float* __restrict__ val, const float* __restrict__ x,
                              float* __restrict__ y, int rows)
{
    for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += gridDim.x * blockDim.x) {
        const int end = rowptr[r + 1];
        int k = rowptr[r];
        float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
        for (; k + 4 <= end; k += 4) {
            s0 += val[k] * x[col[k]];
            s1 += val[k + 1] * x[col[k + 1]];
            s2 += val[k + 2] * x[col[k + 2]];
            s3 += val[k + 3] * x[col[k + 3]];
        }
        y[r] = (s0 + s1) + (s2 + s3);
    }
}
