// Same stride-8 walk with 1024-thread blocks; loads and stores carry the
// evict-first (streaming) cache hint.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    const int R = (n + 7) / 8;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = (t % R) * 8 + t / R;
    if (t < 8 * R && j < n) __stcs(out + j, __ldcs(x + j));
}
