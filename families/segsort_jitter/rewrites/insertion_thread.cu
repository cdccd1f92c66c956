// D insertion_thread: the start's blocks and staging (16 segments per 16-thread block, one
// row of 513 floats each); each thread insertion-sorts its row: key i moves left past every
// larger key before it, each of those shifted one place right.
extern "C" __global__ void k0(const float* __restrict__ in, float* __restrict__ out, int segs)
{
    __shared__ float k[16][513];
    const int t = threadIdx.x;
    const int s0 = blockIdx.x * 16;
    const int keys = min(16, segs - s0) * 512;
    const float* a = in + (long long)s0 * 512;
#pragma unroll 8
    for (int i = t; i < keys; i += 16) k[i >> 9][i & 511] = a[i];
    __syncthreads();
    if (t * 512 < keys) {
        float* o = k[t];
        for (int i = 1; i < 512; ++i) {
            const float v = o[i];
            int j = i;
            while (j > 0 && o[j - 1] > v) { o[j] = o[j - 1]; --j; }
            o[j] = v;
        }
    }
    __syncthreads();
    float* b = out + (long long)s0 * 512;
    for (int i = t; i < keys; i += 16) b[i] = k[i >> 9][i & 511];
}
