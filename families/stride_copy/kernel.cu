// Copy n floats. Thread t copies element j = (t % R) * 8 + t / R with
// R = ceil(n / 8): a stride-8 walk, so pass p = t / R visits every eighth
// element of the whole array before pass p + 1 starts on the next one.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int n)
{
    const int R = (n + 7) / 8;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = (t % R) * 8 + t / R;
    if (t < 8 * R && j < n) out[j] = x[j];
}
