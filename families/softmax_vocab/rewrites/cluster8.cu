// One 8-block cluster per row (grid = 8 R, 512 threads per block). Block
// rank k of the cluster owns the k-th eighth of the row and keeps it in
// registers: up to 16 float4s per thread (C <= 262144), read once. Each
// thread replaces its values by expf(x - m_t) under its own max m_t; the
// block reduces its (max, rescaled sum) pair and publishes it in shared
// memory, and after cluster.sync() every thread merges the 8 pairs read
// through distributed shared memory into the row's (m, s). The block then
// writes y = e * expf(m_t - m) / s from its registers; the split cluster
// barrier keeps every block's shared memory alive until all eight have read
// it.
#include <cooperative_groups.h>

static __device__ __forceinline__ void merge(float& m, float& s, float m2, float s2)
{
    const float mm = fmaxf(m, m2);
    s = s * expf(m - mm) + s2 * expf(m2 - mm);
    m = mm;
}

static __device__ __forceinline__ void warp_merge(float& m, float& s)
{
    for (int d = 16; d > 0; d >>= 1)
        merge(m, s, __shfl_xor_sync(0xffffffffu, m, d), __shfl_xor_sync(0xffffffffu, s, d));
}

extern "C" __global__ void __cluster_dims__(8, 1, 1) k0(const float* __restrict__ x, float* __restrict__ y, int C)
{
    __shared__ float shm[16];
    __shared__ float shs[16];
    __shared__ float2 part;
    cooperative_groups::cluster_group cl = cooperative_groups::this_cluster();
    const int t = threadIdx.x;
    const int lane = t & 31;
    const long long base = (long long)(blockIdx.x >> 3) * C + (long long)cl.block_rank() * (C / 8);
    const float4* row = reinterpret_cast<const float4*>(x + base);
    float4* out = reinterpret_cast<float4*>(y + base);
    const int n4 = C / 32;

    float4 v[16];
    float m = -3.402823466e38f;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
        if (t + 512 * j < n4) {
            v[j] = row[t + 512 * j];
            m = fmaxf(m, fmaxf(fmaxf(v[j].x, v[j].y), fmaxf(v[j].z, v[j].w)));
        }
    }
    const float mt = m;
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
        if (t + 512 * j < n4) {
            v[j] = make_float4(expf(v[j].x - mt), expf(v[j].y - mt), expf(v[j].z - mt), expf(v[j].w - mt));
            s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
        }
    }
    warp_merge(m, s);
    if (lane == 0) {
        shm[t >> 5] = m;
        shs[t >> 5] = s;
    }
    __syncthreads();
    if (t < 32) {
        m = lane < 16 ? shm[lane] : -3.402823466e38f;
        s = lane < 16 ? shs[lane] : 0.0f;
        warp_merge(m, s);
        if (t == 0) part = make_float2(m, s);
    }
    cl.sync();

    m = -3.402823466e38f;
    s = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        const float2 p = *cl.map_shared_rank(&part, k);
        merge(m, s, p.x, p.y);
    }
    cl.barrier_arrive();
    const float f = expf(mt - m) / s;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
        if (t + 512 * j < n4)
            out[t + 512 * j] = make_float4(v[j].x * f, v[j].y * f, v[j].z * f, v[j].w * f);
    }
    cl.barrier_wait();
}
