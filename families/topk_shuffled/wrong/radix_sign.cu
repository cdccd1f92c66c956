// WRONG radix_sign: the key flips only the sign bit, so negative values order backwards.
// C block_radix: one 256-thread block per row. A float's bits are mapped to an
// unsigned key that orders like the float (all bits flipped for a negative value,
// the sign bit set for a positive one). Four passes over the row count, in 256
// shared counters, the next 8-bit digit of the keys that match the digits chosen
// so far; thread 0 picks the digit in which the 32nd largest key falls. The keys
// above that 32nd key are gathered, the rest of the 32 are copies of it, and warp 0
// sorts the 32 by a bitonic shuffle network.
__device__ __forceinline__ unsigned int order_key(float v)
{
    const unsigned int u = __float_as_uint(v);
    return u ^ 0x80000000u;
}

__device__ __forceinline__ float key_value(unsigned int k)
{
    return __uint_as_float(k ^ 0x80000000u);
}

extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int R, int C)
{
    __shared__ unsigned int hist[256];
    __shared__ unsigned int chosen[2];
    __shared__ unsigned int filled;
    __shared__ float top[32];
    const int t = threadIdx.x;
    const int r = blockIdx.x;
    const float4* row4 = reinterpret_cast<const float4*>(x + (long long)r * C);
    const int n4 = C >> 2;
    unsigned int prefix = 0, mask = 0, need = 32;
    for (int shift = 24; shift >= 0; shift -= 8) {
        hist[t] = 0;
        __syncthreads();
        for (int i = t; i < n4; i += 256) {
            const float4 q = row4[i];
            const float v[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const unsigned int k = order_key(v[e]);
                if ((k & mask) == prefix) atomicAdd(&hist[(k >> shift) & 255u], 1u);
            }
        }
        __syncthreads();
        if (t == 0) {
            unsigned int above = 0;
            int d = 255;
            while (d > 0 && above + hist[d] < need) {
                above += hist[d];
                --d;
            }
            chosen[0] = prefix | ((unsigned int)d << shift);
            chosen[1] = need - above;
        }
        __syncthreads();
        prefix = chosen[0];
        need = chosen[1];
        mask |= 255u << shift;
    }
    if (t == 0) filled = 0;
    __syncthreads();
    for (int i = t; i < n4; i += 256) {
        const float4 q = row4[i];
        const float v[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            if (order_key(v[e]) > prefix) top[atomicAdd(&filled, 1u)] = v[e];
        }
    }
    if (t >= 32 - (int)need && t < 32) top[t] = key_value(prefix);
    __syncthreads();
    if (t < 32) {
        float v = top[t];
        for (int k = 2; k <= 32; k <<= 1) {
            for (int j = k >> 1; j > 0; j >>= 1) {
                const float o = __shfl_xor_sync(0xffffffffu, v, j);
                const bool down = (t & k) == 0;
                v = ((t & j) == 0) == down ? fmaxf(v, o) : fminf(v, o);
            }
        }
        out[(long long)r * 32 + t] = v;
    }
}
