// Wrong: bitonic_block with the direction of each compare-exchange taken from bit `stride` of i
// instead of bit `size`: the stages no longer merge bitonic runs, so the output is not sorted.
extern "C" __global__ void k0(const float* __restrict__ in, float* __restrict__ out, int segs)
{
    __shared__ float k[512];
    const int t = threadIdx.x;
    const float* a = in + (long long)blockIdx.x * 512;
    k[t] = a[t];
    k[t + 256] = a[t + 256];
    __syncthreads();
    for (int size = 2; size <= 512; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            const int i = 2 * t - (t & (stride - 1));
            const int j = i + stride;
            const float p = k[i], q = k[j];
            const bool up = (i & stride) == 0;
            if ((p > q) == up) { k[i] = q; k[j] = p; }
            __syncthreads();
        }
    }
    float* o = out + (long long)blockIdx.x * 512;
    o[t] = k[t];
    o[t + 256] = k[t + 256];
}
