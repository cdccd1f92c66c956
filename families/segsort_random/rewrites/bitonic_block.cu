// A bitonic_block: one 256-thread block per segment, two keys per thread. A bitonic sorting
// network in shared memory: for each merge size 2, 4, ..., 512 and each stride size/2, ..., 1
// (45 stages), thread t compare-exchanges the pair (i, i + stride) with i = 2t - (t mod stride),
// ascending where bit `size` of i is clear; a barrier follows every stage.
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
            const bool up = (i & size) == 0;
            if ((p > q) == up) { k[i] = q; k[j] = p; }
            __syncthreads();
        }
    }
    float* o = out + (long long)blockIdx.x * 512;
    o[t] = k[t];
    o[t + 256] = k[t + 256];
}
