// 256-thread blocks; each thread reads one 16-byte uint4, so a block covers
// 4096 bytes. Shared histogram and global merge per block as in the start.
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
    const int i = 16 * (blockIdx.x * 256 + t);
    h[t] = 0;
    __syncthreads();
    if (i + 16 <= n) {
        const uint4 v = reinterpret_cast<const uint4*>(x)[i / 16];
        add4(h, v.x);
        add4(h, v.y);
        add4(h, v.z);
        add4(h, v.w);
    } else {
        for (int j = i; j < n; ++j) atomicAdd(&h[x[j]], 1u);
    }
    __syncthreads();
    atomicAdd(&hist[t], h[t]);
}
