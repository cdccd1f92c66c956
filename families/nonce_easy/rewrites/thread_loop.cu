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

// One thread per item tries nonces 0, 1, 2, ... in order.
extern "C" __global__ void k0(const unsigned int* __restrict__ key, const unsigned char* __restrict__ d,
                              unsigned int* __restrict__ nonce, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const unsigned int hk = mix(key[i]);
    const int di = d[i];
    unsigned int c = 0;
    while (__clz((int)hash2(hk, c)) < di) ++c;
    nonce[i] = c;
}
