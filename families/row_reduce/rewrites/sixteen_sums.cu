// One thread per row, 128-thread blocks as before; the column loop keeps
// sixteen independent partial sums (column c goes to sum c % 16; the last
// C % 16 columns to sum 0), added together at the end.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int R, int C)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R) return;
    const float* row = x + (long long)r * C;
    float s[16] = {};
    int c = 0;
    for (; c + 16 <= C; c += 16)
        for (int k = 0; k < 16; ++k)
            s[k] += row[c + k];
    for (; c < C; ++c)
        s[0] += row[c];
    float t = 0.0f;
    for (int k = 0; k < 16; ++k)
        t += s[k];
    out[r] = t;
}
