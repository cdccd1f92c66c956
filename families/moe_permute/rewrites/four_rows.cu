// The start's k0, k1 and k2; in k3 each warp of a 256-thread block copies
// four consecutive destination rows: every loop step loads one 16-byte piece
// of each of the four source rows, then stores the four (#pragma unroll 4).
#include <cuda_bf16.h>

static __device__ __forceinline__ void ballots(unsigned (&m)[8], int e0, int e1)
{
#pragma unroll
    for (int e = 0; e < 8; ++e) m[e] = __ballot_sync(0xffffffffu, e0 == e || e1 == e);
}

extern "C" __global__ void k0(const int* __restrict__ ids, int* __restrict__ counts, int T)
{
    __shared__ int cnt[8][8];
    const int g = blockIdx.x * 256 + threadIdx.x;
    const int w = threadIdx.x >> 5;
    unsigned m[8];
    ballots(m, g < T ? ids[2 * g] : -1, g < T ? ids[2 * g + 1] : -1);
    if ((threadIdx.x & 31) == 0) {
#pragma unroll
        for (int e = 0; e < 8; ++e) cnt[w][e] = __popc(m[e]);
    }
    __syncthreads();
    if (threadIdx.x < 8) {
        int s = 0;
        for (int k = 0; k < 8; ++k) s += cnt[k][threadIdx.x];
        counts[threadIdx.x * gridDim.x + blockIdx.x] = s;
    }
}

extern "C" __global__ void k1(int* __restrict__ counts, int* __restrict__ offsets, int T)
{
    __shared__ int tot[8];
    const int lane = threadIdx.x & 31;
    const int e = threadIdx.x >> 5;
    const int nch = (T + 255) / 256;
    int* c = counts + e * nch;
    int carry = 0;
    for (int i = 0; i < nch; i += 32) {
        const int v = i + lane < nch ? c[i + lane] : 0;
        int x = v;
        for (int d = 1; d < 32; d <<= 1) {
            const int y = __shfl_up_sync(0xffffffffu, x, d);
            if (lane >= d) x += y;
        }
        if (i + lane < nch) c[i + lane] = carry + x - v;
        carry += __shfl_sync(0xffffffffu, x, 31);
    }
    if (lane == 0) tot[e] = carry;
    __syncthreads();
    int base = 0;
    for (int k = 0; k < e; ++k) base += tot[k];
    for (int i = lane; i < nch; i += 32) c[i] += base;
    if (lane == 0) offsets[e] = base;
    if (threadIdx.x == 0) offsets[8] = 2 * T;
}

extern "C" __global__ void k2(const int* __restrict__ ids, const int* __restrict__ counts,
                              int* __restrict__ rows, int* __restrict__ dst, int T)
{
    __shared__ int cnt[8][8];
    const int g = blockIdx.x * 256 + threadIdx.x;
    const int lane = threadIdx.x & 31;
    const int w = threadIdx.x >> 5;
    const int e0 = g < T ? ids[2 * g] : -1;
    const int e1 = g < T ? ids[2 * g + 1] : -1;
    unsigned m[8];
    ballots(m, e0, e1);
    if (lane == 0) {
#pragma unroll
        for (int e = 0; e < 8; ++e) cnt[w][e] = __popc(m[e]);
    }
    __syncthreads();
    if (g >= T) return;
    const unsigned below = (1u << lane) - 1u;
    int d0 = 0, d1 = 0;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        const int r = __popc(m[e] & below);
        d0 += e == e0 ? r : 0;
        d1 += e == e1 ? r : 0;
    }
    d0 += counts[e0 * gridDim.x + blockIdx.x];
    d1 += counts[e1 * gridDim.x + blockIdx.x];
    for (int k = 0; k < w; ++k) {
        d0 += cnt[k][e0];
        d1 += cnt[k][e1];
    }
    dst[2 * g] = d0;
    dst[2 * g + 1] = d1;
    rows[d0] = g;
    rows[d1] = g;
}

extern "C" __global__ void k3(const __nv_bfloat16* __restrict__ X, const int* __restrict__ rows,
                              __nv_bfloat16* __restrict__ Xp, int T, int H)
{
    const int lane = threadIdx.x & 31;
    const int d = (blockIdx.x * 8 + (threadIdx.x >> 5)) * 4;
    if (d >= 2 * T) return;
    const int nq = min(4, 2 * T - d);
    const uint4* src[4];
    uint4* out[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        src[q] = reinterpret_cast<const uint4*>(X + (long long)rows[q < nq ? d + q : d] * H);
        out[q] = reinterpret_cast<uint4*>(Xp + (long long)(d + q) * H);
    }
#pragma unroll 4
    for (int i = lane; i < H / 8; i += 32) {
        uint4 v[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) v[q] = src[q][i];
#pragma unroll
        for (int q = 0; q < 4; ++q)
            if (q < nq) out[q][i] = v[q];
    }
}
