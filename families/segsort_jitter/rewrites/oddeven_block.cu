// C oddeven_block: one 256-thread block per segment, two keys per thread. Odd-even
// transposition in shared memory: round r compare-exchanges the pairs (i, i + 1) with
// i = 2t + (r mod 2); __syncthreads_or both orders the rounds and says whether any thread
// swapped, and the block stops after an even and an odd round in a row swap nothing.
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
        quiet = __syncthreads_or(sw) ? 0 : quiet + 1;
    }
    float* o = out + (long long)blockIdx.x * 512;
    o[t] = k[t];
    o[t + 256] = k[t + 256];
}
