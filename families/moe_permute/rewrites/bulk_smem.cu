// The start's k0, k1 and k2; k3 stages rows through shared memory. A
// 128-thread block takes four consecutive destination rows: it reads their
// four token indices first, then one bulk copy per row (cuda::memcpy_async
// over the block, 16-byte-aligned size, one cuda::barrier) brings the four
// H-value source rows into dynamic shared memory; after arrive_and_wait the
// threads store them with 16-byte stores.
#include <cooperative_groups.h>
#include <cuda/barrier>
#pragma nv_diag_suppress static_var_with_dynamic_init
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
    extern __shared__ uint4 buf[];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    const cooperative_groups::thread_block block = cooperative_groups::this_thread_block();
    const int d = blockIdx.x * 4;
    const int nq = min(4, 2 * T - d);
    const int n16 = H / 8;
    int src[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) src[q] = rows[q < nq ? d + q : d];
    if (threadIdx.x == 0) init(&bar, blockDim.x);
    block.sync();
#pragma unroll
    for (int q = 0; q < 4; ++q)
        if (q < nq)
            cuda::memcpy_async(block, buf + q * n16, X + (long long)src[q] * H,
                               cuda::aligned_size_t<16>(H * 2), bar);
    bar.arrive_and_wait();
    uint4* out = reinterpret_cast<uint4*>(Xp + (long long)d * H);
#pragma unroll 4
    for (int i = threadIdx.x; i < nq * n16; i += 128) out[i] = buf[i];
}
