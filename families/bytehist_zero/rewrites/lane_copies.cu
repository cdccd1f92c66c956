// Same blocks and reads; the shared histogram has 32 copies, h[bin][lane], one
// per lane index: each thread adds into the copy of its lane index (shared by
// the same lane of the block's 8 warps, so not private to a thread), so the
// 32 lanes of a warp always address 32 different banks. Before the global merge, thread t sums the 32 copies of
// bin t, starting at copy `lane`, so that each step reads 32 different banks.
extern "C" __global__ void k0(const unsigned char* __restrict__ x, const float* __restrict__ v,
                              float* __restrict__ hist, int n)
{
    __shared__ float h[256][32];
    const int t = threadIdx.x;
    const int lane = t & 31;
    const int i = blockIdx.x * 256 + t;
    for (int k = t; k < 256 * 32; k += 256)
        h[k / 32][k % 32] = 0.f;
    __syncthreads();
    if (i < n) atomicAdd(&h[x[i]][lane], v[i]);
    __syncthreads();
    float s = 0.f;
    for (int k = 0; k < 32; ++k)
        s += h[t][(k + lane) & 31];
    atomicAdd(&hist[t], s);
}
