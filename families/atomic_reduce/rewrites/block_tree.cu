// One element per thread; a 256-thread block sums its elements with a
// shared-memory tree (sh[t] += sh[t + s]), then thread 0 adds the block total.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
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
    if (t == 0) atomicAdd(out, sh[0]);
}
