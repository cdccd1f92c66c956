// Two launches. k0: the start's blocks and shared histogram, but instead of
// global atomics each block writes its 256 counts to row blockIdx.x of part.
// k1: each 256-thread block sums 1024 rows of part, thread t for bin t, and
// adds its total to hist[t] with one atomicAdd.
static __device__ __forceinline__ void add4(unsigned int* h, unsigned int w)
{
    atomicAdd(&h[w & 255u], 1u);
    atomicAdd(&h[(w >> 8) & 255u], 1u);
    atomicAdd(&h[(w >> 16) & 255u], 1u);
    atomicAdd(&h[w >> 24], 1u);
}

extern "C" __global__ void k0(const unsigned char* __restrict__ x, unsigned int* __restrict__ part, int n)
{
    __shared__ unsigned int h[256];
    const int t = threadIdx.x;
    const int i = 4 * (blockIdx.x * 256 + t);
    h[t] = 0;
    __syncthreads();
    if (i + 4 <= n)
        add4(h, reinterpret_cast<const unsigned int*>(x)[i / 4]);
    else
        for (int j = i; j < n; ++j) atomicAdd(&h[x[j]], 1u);
    __syncthreads();
    part[blockIdx.x * 256 + t] = h[t];
}

extern "C" __global__ void k1(const unsigned int* __restrict__ part, unsigned int* __restrict__ hist, int n)
{
    const int t = threadIdx.x;
    const int rows = (n + 1023) / 1024;
    const int first = blockIdx.x * 1024;
    const int last = min(rows, first + 1024);
    unsigned int s = 0;
    for (int r = first; r < last; ++r)
        s += part[r * 256 + t];
    atomicAdd(&hist[t], s);
}
