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

// One warp per item: in round r lane l tries nonce 32r + l; the lowest lane
// that succeeds gives the nonce.
extern "C" __global__ void k0(const unsigned int* __restrict__ key, const unsigned char* __restrict__ d,
                              unsigned int* __restrict__ nonce, int n)
{
    const int lane = threadIdx.x & 31;
    const int item = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const bool live = item < n;
    const unsigned int hk = live ? mix(key[item]) : 0u;
    const int di = live ? d[item] : 0;
    for (unsigned int r = 0;; ++r) {
        const unsigned int b = __ballot_sync(0xffffffffu, __clz((int)hash2(hk, 32u * r + lane)) >= di);
        if (b != 0u) {
            if (lane == 0 && live) nonce[item] = 32u * r + __ffs(b) - 1;
            break;
        }
    }
}
