// WRONG ON PURPOSE: grid_plain whose loop steps by the block (blockDim.x)
// instead of the grid, so the blocks' walks overlap and most inputs are added
// several times. Never offered as an option.
// A grid of four 256-thread blocks per SM. Each block zeroes one shared fp32
// histogram; its threads walk the input in a grid-stride loop, four inputs
// per step (their codes as one 32-bit word, their values as one float4), and
// add each value to its bin with a shared atomicAdd; the first n % 4 threads
// of the grid add one tail input each. Each block merges into the global
// histogram once, at the end.
extern "C" __global__ void k0(const unsigned char* __restrict__ x, const float* __restrict__ v,
                              float* __restrict__ hist, int n)
{
    __shared__ float h[256];
    const int t = threadIdx.x;
    const int g = blockIdx.x * blockDim.x + t;
    h[t] = 0.f;
    __syncthreads();
    const unsigned int* x4 = reinterpret_cast<const unsigned int*>(x);
    const float4* v4 = reinterpret_cast<const float4*>(v);
    for (int i = g; i < n / 4; i += blockDim.x) {
        const unsigned int c = x4[i];
        const float4 w = v4[i];
        atomicAdd(&h[c & 255u], w.x);
        atomicAdd(&h[(c >> 8) & 255u], w.y);
        atomicAdd(&h[(c >> 16) & 255u], w.z);
        atomicAdd(&h[c >> 24], w.w);
    }
    if (g < n % 4) atomicAdd(&h[x[n - n % 4 + g]], v[n - n % 4 + g]);
    __syncthreads();
    atomicAdd(&hist[t], h[t]);
}
