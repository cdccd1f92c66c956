// Wrong on purpose: the look-back kernel with two changes. (1) A tile
// publishes only its aggregate (flag 1; tile 0 its prefix) and never
// upgrades it to its inclusive prefix: on its own a correct protocol, in
// which every look-back walks back across 32-tile windows to tile 0, so the
// emulated gate (tiles run one at a time in ticket order) reaches the
// multi-window branch that lookback.cu takes only on a GPU. (2) The defect:
// a window with no inclusive prefix (first == 32) adds nothing, so tile 33
// and later lose the aggregates of every window before the last.
static __device__ __forceinline__ int scan16(int (&v)[16], int lane)
{
    int carry = 0;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
        int x = v[j];
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const int y = __shfl_up_sync(0xffffffffu, x, d);
            if (lane >= d) x += y;
        }
        v[j] = x + carry;
        carry += __shfl_sync(0xffffffffu, x, 31);
    }
    return carry;
}

// Inclusive scan of the 16 * blockDim.x values in v across the block; returns their total.
static __device__ __forceinline__ int block_scan(int (&v)[16], int* tot)
{
    const int lane = threadIdx.x & 31;
    const int w = threadIdx.x >> 5;
    const int s = scan16(v, lane);
    if (lane == 0) tot[w] = s;
    __syncthreads();
    int before = 0, all = 0;
    for (int k = 0; k < (int)(blockDim.x >> 5); ++k) {
        before += k < w ? tot[k] : 0;
        all += tot[k];
    }
#pragma unroll
    for (int j = 0; j < 16; ++j) v[j] += before;
    return all;
}

extern "C" __global__ void k0(const int* __restrict__ in, int* __restrict__ out,
                              unsigned long long* __restrict__ state, unsigned int* __restrict__ ticket, int n)
{
    __shared__ int tot[16];
    __shared__ int tile;
    __shared__ int prefix;
    const int lane = threadIdx.x & 31;
    if (threadIdx.x == 0) tile = (int)atomicAdd(ticket, 1u);
    __syncthreads();
    const int b = tile;
    const int base = b * 8192 + (threadIdx.x >> 5) * 512 + lane;
    int v[16];
#pragma unroll
    for (int j = 0; j < 16; ++j) v[j] = base + 32 * j < n ? in[base + 32 * j] : 0;
    const int total = block_scan(v, tot);
    if (threadIdx.x < 32) {
        volatile unsigned long long* st = state;
        if (lane == 0) st[b] = (b == 0 ? 2ull << 32 : 1ull << 32) | (unsigned)total;
        int excl = 0;
        if (b > 0) {
            for (int k = b - 1 - lane;; k -= 32) {
                unsigned long long w = k >= 0 ? st[k] : 2ull << 32;
                while (!__all_sync(0xffffffffu, (w >> 32) != 0)) {
                    __nanosleep(64);
                    w = k >= 0 ? st[k] : 2ull << 32;
                }
                const unsigned p = __ballot_sync(0xffffffffu, (w >> 32) == 2);
                const int first = p ? __ffs(p) - 1 : 32;
                excl += __reduce_add_sync(0xffffffffu, p && lane <= first ? (int)(unsigned)w : 0);
                if (p) break;
            }
        }
        if (lane == 0) prefix = excl;
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 16; ++j)
        if (base + 32 * j < n) out[base + 32 * j] = v[j] + prefix;
}
