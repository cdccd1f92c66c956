// Wrong: push_ballot's code with no zero_before in its plan: the atomics add onto whatever y
// held before the launch (NaN poison in the gate), never onto zero.
extern "C" __global__ void k0(const int* __restrict__ rowptr, const int* __restrict__ col,
                              const float* __restrict__ val, const float* __restrict__ x,
                              float* __restrict__ y, int n)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    const float xj = j < n ? x[j] : 0.f;
    unsigned int m = __ballot_sync(0xffffffffu, xj != 0.f);
    while (m) {
        const int src = __ffs(m) - 1;
        m &= m - 1;
        const int c = __shfl_sync(0xffffffffu, j, src);
        const float xc = __shfl_sync(0xffffffffu, xj, src);
        const int end = rowptr[c + 1];
        for (int k = rowptr[c] + lane; k < end; k += 32) atomicAdd(&y[col[k]], val[k] * xc);
    }
}
