// Same blocks and reads as the start, and no shared histogram: peel() below
// sums the warp's equal codes and adds each sum to the global histogram.
// While lanes remain, the first remaining lane's code is broadcast, a ballot
// finds the remaining lanes with that code, a five-step shuffle sums their
// values, and the first lane adds the sum to hist with one global atomicAdd.
// Every lane of the warp runs every pass (the loop condition is the same in
// all lanes).
static __device__ __forceinline__ void peel(float* hist, unsigned int b, float w, int lane)
{
    unsigned int todo = 0xffffffffu;
    while (todo) {
        const int src = __ffs(todo) - 1;
        const unsigned int c = __shfl_sync(0xffffffffu, b, src);
        const unsigned int same = __ballot_sync(0xffffffffu, b == c) & todo;
        float s = ((same >> lane) & 1u) ? w : 0.f;
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == src) atomicAdd(&hist[c], s);
        todo &= ~same;
    }
}

extern "C" __global__ void k0(const unsigned char* __restrict__ x, const float* __restrict__ v,
                              float* __restrict__ hist, int n)
{
    const int t = threadIdx.x;
    const int i = blockIdx.x * 256 + t;
    peel(hist, i < n ? x[i] : 0u, i < n ? v[i] : 0.f, t & 31);
}
