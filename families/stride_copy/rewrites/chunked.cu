// The same stride-8 walk, run inside consecutive chunks of S = 65536 floats
// (256 KB): thread t works in the chunk that starts at base = (t / S) * S, at
// walk position w = t - base, element base + (w % R) * 8 + w / R with
// R = ceil(m / 8) for the chunk's m elements. A chunk's eight passes follow
// each other closely, so its sectors are still in L2 when the next pass needs them.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    const int S = 65536;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= 8 * ((n + 7) / 8)) return;
    const int base = t / S * S;
    const int R = (min(S, n - base) + 7) / 8;
    const int w = t - base;
    const int j = base + (w % R) * 8 + w / R;
    if (j < n) out[j] = x[j];
}
