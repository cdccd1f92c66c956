// Counts n bytes into 256 bins (hist is zeroed before the launch plan).
// 256-thread blocks; each thread reads one 4-byte word, so a block covers 1024
// bytes. The block counts into a shared histogram with shared atomics, then
// every thread adds its bin to the global histogram with atomicAdd.
static __device__ __forceinline__ void add4(unsigned int* h, unsigned int w)
{
    atomicAdd(&h[w & 255u], 1u);
    atomicAdd(&h[(w >> 8) & 255u], 1u);
    atomicAdd(&h[(w >> 16) & 255u], 1u);
    atomicAdd(&h[w >> 24], 1u);
}

extern "C" __global__ void k0(const unsigned char* __restrict__ x, unsigned int* __restrict__ hist, int n)
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
    atomicAdd(&hist[t], h[t]);
}
