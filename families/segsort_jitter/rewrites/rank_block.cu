// B rank_block: one 512-thread block per segment, one key per thread. Each thread counts the
// keys in shared memory that sort before its own (smaller, or equal at a lower index) and
// writes its key at that rank: one barrier in all.
extern "C" __global__ void k0(const float* __restrict__ in, float* __restrict__ out, int segs)
{
    __shared__ float k[512];
    const int t = threadIdx.x;
    const float v = in[(long long)blockIdx.x * 512 + t];
    k[t] = v;
    __syncthreads();
    int r = 0;
    for (int i = 0; i < 512; ++i) {
        const float u = k[i];
        r += (u < v) || (u == v && i < t);
    }
    out[(long long)blockIdx.x * 512 + r] = v;
}
