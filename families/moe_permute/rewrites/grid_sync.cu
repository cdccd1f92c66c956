// One cooperative launch (four 256-thread blocks per SM) running the start's
// four steps as phases separated by grid.sync(): per-chunk expert counts
// (blocks loop over chunks), the scan by block 0, the per-chunk ranks, then
// one warp per destination row copying with 16-byte loads and stores
// (#pragma unroll 4), the warps looping over rows.
#include <cooperative_groups.h>
#include <cuda_bf16.h>

static __device__ __forceinline__ void ballots(unsigned (&m)[8], int e0, int e1)
{
#pragma unroll
    for (int e = 0; e < 8; ++e) m[e] = __ballot_sync(0xffffffffu, e0 == e || e1 == e);
}

extern "C" __global__ void k0(const int* __restrict__ ids, const __nv_bfloat16* __restrict__ X,
                              int* __restrict__ counts, int* __restrict__ offsets, int* __restrict__ rows,
                              int* __restrict__ dst, __nv_bfloat16* __restrict__ Xp, int T, int H)
{
    __shared__ int cnt[8][8];
    __shared__ int tot[8];
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    const int lane = threadIdx.x & 31;
    const int w = threadIdx.x >> 5;
    const int nch = (T + 255) / 256;
    unsigned m[8];

    for (int c = blockIdx.x; c < nch; c += gridDim.x) {
        const int g = c * 256 + threadIdx.x;
        ballots(m, g < T ? ids[2 * g] : -1, g < T ? ids[2 * g + 1] : -1);
        if (lane == 0) {
#pragma unroll
            for (int e = 0; e < 8; ++e) cnt[w][e] = __popc(m[e]);
        }
        __syncthreads();
        if (threadIdx.x < 8) {
            int s = 0;
            for (int k = 0; k < 8; ++k) s += cnt[k][threadIdx.x];
            counts[threadIdx.x * nch + c] = s;
        }
        __syncthreads();
    }
    grid.sync();

    if (blockIdx.x == 0) {
        int* cc = counts + w * nch;
        int carry = 0;
        for (int i = 0; i < nch; i += 32) {
            const int v = i + lane < nch ? cc[i + lane] : 0;
            int x = v;
            for (int d = 1; d < 32; d <<= 1) {
                const int y = __shfl_up_sync(0xffffffffu, x, d);
                if (lane >= d) x += y;
            }
            if (i + lane < nch) cc[i + lane] = carry + x - v;
            carry += __shfl_sync(0xffffffffu, x, 31);
        }
        if (lane == 0) tot[w] = carry;
        __syncthreads();
        int base = 0;
        for (int k = 0; k < w; ++k) base += tot[k];
        for (int i = lane; i < nch; i += 32) cc[i] += base;
        if (lane == 0) offsets[w] = base;
        if (threadIdx.x == 0) offsets[8] = 2 * T;
    }
    grid.sync();

    for (int c = blockIdx.x; c < nch; c += gridDim.x) {
        const int g = c * 256 + threadIdx.x;
        const int e0 = g < T ? ids[2 * g] : -1;
        const int e1 = g < T ? ids[2 * g + 1] : -1;
        ballots(m, e0, e1);
        if (lane == 0) {
#pragma unroll
            for (int e = 0; e < 8; ++e) cnt[w][e] = __popc(m[e]);
        }
        __syncthreads();
        if (g < T) {
            const unsigned below = (1u << lane) - 1u;
            int d0 = 0, d1 = 0;
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                const int r = __popc(m[e] & below);
                d0 += e == e0 ? r : 0;
                d1 += e == e1 ? r : 0;
            }
            d0 += counts[e0 * nch + c];
            d1 += counts[e1 * nch + c];
            for (int k = 0; k < w; ++k) {
                d0 += cnt[k][e0];
                d1 += cnt[k][e1];
            }
            dst[2 * g] = d0;
            dst[2 * g + 1] = d1;
            rows[d0] = g;
            rows[d1] = g;
        }
        __syncthreads();
    }
    grid.sync();

    for (int d = blockIdx.x * 8 + w; d < 2 * T; d += gridDim.x * 8) {
        const uint4* src = reinterpret_cast<const uint4*>(X + (long long)rows[d] * H);
        uint4* out = reinterpret_cast<uint4*>(Xp + (long long)d * H);
#pragma unroll 4
        for (int i = lane; i < H / 8; i += 32) out[i] = src[i];
    }
}
