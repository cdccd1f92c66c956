// A grid of four 256-thread blocks per SM. Each block zeroes one shared
// histogram, then its threads walk the input in a grid-stride loop of 16-byte
// (uint4) reads; the first n % 16 threads of the grid count one tail byte
// each. Each block merges into the global histogram once, at the end.
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
    const int g = blockIdx.x * blockDim.x + t;
    h[t] = 0;
    __syncthreads();
    const uint4* x16 = reinterpret_cast<const uint4*>(x);
    for (int i = g; i < n / 16; i += gridDim.x * blockDim.x) {
        const uint4 v = x16[i];
        add4(h, v.x);
        add4(h, v.y);
        add4(h, v.z);
        add4(h, v.w);
    }
    if (g < n % 16) atomicAdd(&h[x[n - n % 16 + g]], 1u);
    __syncthreads();
    atomicAdd(&hist[t], h[t]);
}
