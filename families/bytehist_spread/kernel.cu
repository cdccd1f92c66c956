// hist[b] += v[i] for every input i with code x[i] == b (hist is zeroed before
// the launch plan). 256-thread blocks, one input per thread: the block sums
// into a shared fp32 histogram with atomicAdd, then every thread adds its bin
// to the global histogram with atomicAdd, so every 256 inputs cost 256 global
// atomics on the same 256 addresses.
extern "C" __global__ void k0(const unsigned char* __restrict__ x, const float* __restrict__ v,
                              float* __restrict__ hist, int n)
{
    __shared__ float h[256];
    const int t = threadIdx.x;
    const int i = blockIdx.x * 256 + t;
    h[t] = 0.f;
    __syncthreads();
    if (i < n) atomicAdd(&h[x[i]], v[i]);
    __syncthreads();
    atomicAdd(&hist[t], h[t]);
}
