// Inclusive prefix sum of n int32 values, reduce-then-scan in three launches.
// A tile is 8192 values scanned by 512 threads: warp w owns the tile's
// values [512w, 512w + 512) and its lane l holds value 32j + l of them for
// j < 16 (scalar loads, a warp reads 128 contiguous bytes per j). k0 adds
// each warp's sum into its tile's sum (zeroed before the plan); k1, a single
// 512-thread block, turns the tile sums into exclusive offsets in place; k2
// scans each tile again and adds its offset.
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

extern "C" __global__ void k0(const int* __restrict__ in, int* __restrict__ sums, int n)
{
    const int lane = threadIdx.x & 31;
    const int base = blockIdx.x * 8192 + (threadIdx.x >> 5) * 512 + lane;
    int s = 0;
#pragma unroll
    for (int j = 0; j < 16; ++j) s += base + 32 * j < n ? in[base + 32 * j] : 0;
    s = __reduce_add_sync(0xffffffffu, s);
    if (lane == 0) atomicAdd(&sums[blockIdx.x], s);
}

extern "C" __global__ void k1(int* __restrict__ sums, int n)
{
    __shared__ int tot[16];
    const int lane = threadIdx.x & 31;
    const int nb = (n + 8191) / 8192;
    int carry = 0;
    for (int c = 0; c < nb; c += 8192) {
        const int base = c + (threadIdx.x >> 5) * 512 + lane;
        int v[16], o[16];
#pragma unroll
        for (int j = 0; j < 16; ++j) o[j] = v[j] = base + 32 * j < nb ? sums[base + 32 * j] : 0;
        const int total = block_scan(v, tot);
#pragma unroll
        for (int j = 0; j < 16; ++j)
            if (base + 32 * j < nb) sums[base + 32 * j] = carry + v[j] - o[j];
        carry += total;
        __syncthreads();
    }
}

extern "C" __global__ void k2(const int* __restrict__ in, const int* __restrict__ sums,
                              int* __restrict__ out, int n)
{
    __shared__ int tot[16];
    const int base = blockIdx.x * 8192 + (threadIdx.x >> 5) * 512 + (threadIdx.x & 31);
    int v[16];
#pragma unroll
    for (int j = 0; j < 16; ++j) v[j] = base + 32 * j < n ? in[base + 32 * j] : 0;
    block_scan(v, tot);
    const int off = sums[blockIdx.x];
#pragma unroll
    for (int j = 0; j < 16; ++j)
        if (base + 32 * j < n) out[base + 32 * j] = v[j] + off;
}
