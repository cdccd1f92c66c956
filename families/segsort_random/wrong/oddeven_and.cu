// Wrong: oddeven_block with __syncthreads_and in place of __syncthreads_or: a round counts as
// quiet unless every thread swapped, so the block stops after two rounds, long before sorted.
extern "C" __global__ void k0(const float* __restrict__ in, float* __restrict__ out, int segs)
{
    __shared__ float k[512];
    const int t = threadIdx.x;
    const float* a = in + (long long)blockIdx.x * 512;
    k[t] = a[t];
    k[t + 256] = a[t + 256];
    __syncthreads();
    int quiet = 0;
    for (int round = 0; quiet < 2; ++round) {
        const int i = 2 * t + (round & 1);
        int sw = 0;
        if (i + 1 < 512) {
            const float p = k[i], q = k[i + 1];
            if (p > q) { k[i] = q; k[i + 1] = p; sw = 1; }
        }
        quiet = __syncthreads_and(sw) ? 0 : quiet + 1;
    }
    float* o = out + (long long)blockIdx.x * 512;
    o[t] = k[t];
    o[t + 256] = k[t + 256];
}
