// A grid of four 256-thread blocks per SM. Each block zeroes one shared fp32
// histogram; its threads walk the input in a grid-stride loop, four inputs
// per step (their codes as one 32-bit word, their values as one float4), and
// add each of the four through peel() below; the first n % 4 threads of the
// grid then add one tail input each (every lane joins the tail's peel).
// Each block merges into the global histogram once, at the end.
// The warp sums equal codes before one shared atomicAdd per distinct code:
// while lanes remain, the first remaining lane's code is broadcast, a ballot
// finds the remaining lanes with that code, a five-step shuffle sums their
// values, and the first lane adds the sum. Every lane of the warp runs every
// pass (the loop condition is the same in all lanes).
static __device__ __forceinline__ void peel(float* h, unsigned int b, float w, int lane)
{
    unsigned int todo = 0xffffffffu;
    while (todo) {
        const int src = __ffs(todo) - 1;
        const unsigned int c = __shfl_sync(0xffffffffu, b, src);
        const unsigned int same = __ballot_sync(0xffffffffu, b == c) & todo;
        float s = ((same >> lane) & 1u) ? w : 0.f;
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == src) atomicAdd(&h[c], s);
        todo &= ~same;
    }
}

extern "C" __global__ void k0(const unsigned char* __restrict__ x, const float* __restrict__ v,
                              float* __restrict__ hist, int n)
{
    __shared__ float h[256];
    const int t = threadIdx.x;
    const int g = blockIdx.x * blockDim.x + t;
    h[t] = 0.f;
    __syncthreads();
    const unsigned int* x4 = reinterpret_cast<const unsigned int*>(x);
    const float4* v4 = reinterpret_cast<const float4*>(v);
    const int lane = t & 31;
    const int steps = n / 4;
    const int stride = gridDim.x * blockDim.x;
    const int rounds = (steps + stride - 1) / stride;   // the same in every lane, so whole warps run every peel
    for (int r = 0; r < rounds; ++r) {
        const int i = g + r * stride;
        unsigned int c = 0u;
        float4 w = make_float4(0.f, 0.f, 0.f, 0.f);
        if (i < steps) { c = x4[i]; w = v4[i]; }
        peel(h, c & 255u, w.x, lane);
        peel(h, (c >> 8) & 255u, w.y, lane);
        peel(h, (c >> 16) & 255u, w.z, lane);
        peel(h, c >> 24, w.w, lane);
    }
    const int j = 4 * steps + g;
    peel(h, j < n ? x[j] : 0u, j < n ? v[j] : 0.f, lane);
    __syncthreads();
    atomicAdd(&hist[t], h[t]);
}
