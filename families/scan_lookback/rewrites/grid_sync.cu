// One cooperative launch of min(sm_count, tiles) 512-thread blocks (86
// registers on sm_90, so one block per SM). Block b owns a contiguous run
// of the start's 8192-value tiles. Phase 1:
// each block sums its run into part[b]. grid.sync(). Phase 2: warp 0 of
// block 0 turns part[] into exclusive offsets, 32 sums per step.
// grid.sync(). Phase 3: each block scans its tiles in order, carrying the
// running offset from one tile to the next.
#include <cooperative_groups.h>

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

extern "C" __global__ void k0(const int* __restrict__ in, int* __restrict__ out, int* __restrict__ part, int n)
{
    __shared__ int tot[16];
    cooperative_groups::grid_group g = cooperative_groups::this_grid();
    const int lane = threadIdx.x & 31;
    const int nt = (n + 8191) / 8192;
    const int per = (nt + gridDim.x - 1) / gridDim.x;
    const int t0 = blockIdx.x * per;
    const int t1 = min(t0 + per, nt);
    const int off = (threadIdx.x >> 5) * 512 + lane;

    int s = 0;
    for (int b = t0; b < t1; ++b) {
#pragma unroll
        for (int j = 0; j < 16; ++j) s += b * 8192 + off + 32 * j < n ? in[b * 8192 + off + 32 * j] : 0;
    }
    s = __reduce_add_sync(0xffffffffu, s);
    if (lane == 0) tot[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        int a = 0;
        for (int k = 0; k < 16; ++k) a += tot[k];
        part[blockIdx.x] = a;
    }
    g.sync();

    if (blockIdx.x == 0 && threadIdx.x < 32) {
        int carry = 0;
        for (int c = 0; c < (int)gridDim.x; c += 32) {
            const int v = c + lane < (int)gridDim.x ? part[c + lane] : 0;
            int x = v;
            for (int d = 1; d < 32; d <<= 1) {
                const int y = __shfl_up_sync(0xffffffffu, x, d);
                if (lane >= d) x += y;
            }
            if (c + lane < (int)gridDim.x) part[c + lane] = carry + x - v;
            carry += __shfl_sync(0xffffffffu, x, 31);
        }
    }
    g.sync();

    int carry = part[blockIdx.x];
    for (int b = t0; b < t1; ++b) {
        const int base = b * 8192 + off;
        int v[16];
#pragma unroll
        for (int j = 0; j < 16; ++j) v[j] = base + 32 * j < n ? in[base + 32 * j] : 0;
        const int total = block_scan(v, tot);
#pragma unroll
        for (int j = 0; j < 16; ++j)
            if (base + 32 * j < n) out[base + 32 * j] = v[j] + carry;
        carry += total;
        __syncthreads();
    }
}
