// No tile and no loop: each thread clamps its own element in registers.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out,
                              long long n, float lo, float hi)
{
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const long long g = (long long)blockIdx.x * 1024 + ty * 32 + tx;

    if (g < n) out[g] = fminf(fmaxf(x[g], lo), hi);
}
