// Start: one thread per segment. A 16-thread block stages 16 consecutive segments in shared
// memory (one row of 513 floats each, so the 16 threads' rows start in different banks) and
// each thread bubble-sorts its own row: passes of neighbour compare-exchanges, each pass one
// key shorter, until a pass swaps nothing. Then the block writes the 16 rows back.
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
        for (int end = 511; end > 0; --end) {
            int swapped = 0;
            for (int i = 0; i < end; ++i) {
                const float p = o[i], q = o[i + 1];
                if (p > q) { o[i] = q; o[i + 1] = p; swapped = 1; }
            }
            if (!swapped) break;
        }
    }
    __syncthreads();
    float* b = out + (long long)s0 * 512;
    for (int i = t; i < keys; i += 16) b[i] = k[i >> 9][i & 511];
}
