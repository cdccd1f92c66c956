// One launch, one 256-thread block per row. Each thread keeps its two float4
// quads of the row (quads t and t + 256; C <= 2048) in registers while the
// block finds the max, then the sum, in shared memory; then it writes y.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ y, int C)
{
    __shared__ float sh[256];
    const int t = threadIdx.x;
    const float4* row = reinterpret_cast<const float4*>(x + blockIdx.x * C);
    const float ninf = -__int_as_float(0x7f800000);
    const bool h0 = t < C / 4;
    const bool h1 = t + 256 < C / 4;
    float4 a = h0 ? row[t] : make_float4(ninf, ninf, ninf, ninf);
    float4 b = h1 ? row[t + 256] : make_float4(ninf, ninf, ninf, ninf);

    sh[t] = fmaxf(fmaxf(fmaxf(a.x, a.y), fmaxf(a.z, a.w)), fmaxf(fmaxf(b.x, b.y), fmaxf(b.z, b.w)));
    __syncthreads();
    for (int d = 128; d > 0; d /= 2) {
        if (t < d) sh[t] = fmaxf(sh[t], sh[t + d]);
        __syncthreads();
    }
    const float mr = sh[0];
    __syncthreads();

    a = make_float4(expf(a.x - mr), expf(a.y - mr), expf(a.z - mr), expf(a.w - mr));
    b = make_float4(expf(b.x - mr), expf(b.y - mr), expf(b.z - mr), expf(b.w - mr));
    sh[t] = (h0 ? a.x + a.y + a.z + a.w : 0.0f) + (h1 ? b.x + b.y + b.z + b.w : 0.0f);
    __syncthreads();
    for (int d = 128; d > 0; d /= 2) {
        if (t < d) sh[t] += sh[t + d];
        __syncthreads();
    }
    const float sr = sh[0];

    float4* out = reinterpret_cast<float4*>(y + blockIdx.x * C);
    if (h0) out[t] = make_float4(a.x / sr, a.y / sr, a.z / sr, a.w / sr);
    if (h1) out[t + 256] = make_float4(b.x / sr, b.y / sr, b.z / sr, b.w / sr);
}
