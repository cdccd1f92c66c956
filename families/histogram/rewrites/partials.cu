// Two launches. k0: wide_reads' blocks (one 16-byte uint4 per thread, 4096
// bytes per block) and shared histogram, but instead of global atomics each
// block writes its 256 counts to row blockIdx.x of part (1 KB of counts per
// 4 KB of input). k1: each 256-thread block sums 256 rows of part, thread t
// for bin t, and adds its total to hist[t] with one atomicAdd.
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
    part[blockIdx.x * 256 + t] = h[t];
}

extern "C" __global__ void k1(const unsigned int* __restrict__ part, unsigned int* __restrict__ hist, int n)
{
    const int t = threadIdx.x;
    const int rows = (n + 4095) / 4096;
    const int first = blockIdx.x * 256;
    const int last = min(rows, first + 256);
    unsigned int s = 0;
    for (int r = first; r < last; ++r)
        s += part[r * 256 + t];
    atomicAdd(&hist[t], s);
}
