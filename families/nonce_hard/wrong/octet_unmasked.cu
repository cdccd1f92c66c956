// Hashcash nonce search: nonce[i] is the smallest c >= 0 whose 32-bit hash
// hash2(mix(key[i]), c) has at least d[i] leading zero bits. mix is a 32-bit
// integer finaliser; hash2 applies it twelve times. Every file of the family
// has the same two helpers.

static __device__ __forceinline__ unsigned int mix(unsigned int h)
{
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return h;
}

static __device__ __forceinline__ unsigned int hash2(unsigned int hk, unsigned int c)
{
    unsigned int h = hk ^ c;
#pragma unroll
    for (int r = 0; r < 12; ++r) h = mix(h + 0x9e3779b9u * (unsigned int)r);
    return h;
}

// Eight lanes per item, four items per warp: in round r lane s of a group tries
// nonce 8r + s; the group's byte of the ballot holds its successes. A group that
// has found its nonce keeps its lanes in the loop (every ballot names the full
// warp) until all four groups have found theirs.
extern "C" __global__ void k0(const unsigned int* __restrict__ key, const unsigned char* __restrict__ d,
                              unsigned int* __restrict__ nonce, int n)
{
    const int lane = threadIdx.x & 31;
    const int item = (blockIdx.x * blockDim.x + threadIdx.x) >> 3;
    const int s = lane & 7;
    const bool live = item < n;
    const unsigned int hk = live ? mix(key[item]) : 0u;
    const int di = live ? d[item] : 0;
    bool found = false;
    for (unsigned int r = 0;; ++r) {
        const unsigned int b = __ballot_sync(0xffffffffu, __clz((int)hash2(hk, 8u * r + s)) >= di);
        const unsigned int g = (b >> (lane & 24)) & 0xffu;
        if (g != 0u && s == 0 && live) nonce[item] = 8u * r + __ffs(g) - 1;
        found = found || g != 0u;
        if (__all_sync(0xffffffffu, found)) break;
    }
}
