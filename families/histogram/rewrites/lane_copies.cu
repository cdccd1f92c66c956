// Same blocks and reads; the shared histogram has 32 copies, h[bin][lane], and
// each lane counts into its own copy. Before the global merge, thread t sums
// the 32 copies of bin t, starting at copy `lane`, so that at each step the 32
// threads of a warp read 32 different banks.
static __device__ __forceinline__ void add4(unsigned int (*h)[32], int lane, unsigned int w)
{
    atomicAdd(&h[w & 255u][lane], 1u);
    atomicAdd(&h[(w >> 8) & 255u][lane], 1u);
    atomicAdd(&h[(w >> 16) & 255u][lane], 1u);
    atomicAdd(&h[w >> 24][lane], 1u);
}

extern "C" __global__ void k0(const unsigned char* __restrict__ x, unsigned int* __restrict__ hist, int n)
{
    __shared__ unsigned int h[256][32];
    const int t = threadIdx.x;
    const int lane = t & 31;
    const int i = 4 * (blockIdx.x * 256 + t);
    for (int k = t; k < 256 * 32; k += 256)
        h[k / 32][k % 32] = 0;
    __syncthreads();
    if (i + 4 <= n)
        add4(h, lane, reinterpret_cast<const unsigned int*>(x)[i / 4]);
    else
        for (int j = i; j < n; ++j) atomicAdd(&h[x[j]][lane], 1u);
    __syncthreads();
    unsigned int s = 0;
    for (int k = 0; k < 32; ++k)
        s += h[t][(k + lane) & 31];
    atomicAdd(&hist[t], s);
}
