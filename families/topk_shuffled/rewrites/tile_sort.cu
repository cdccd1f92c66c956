// B tile_sort: k0 sorts each 1024-value tile of a row descending in shared memory
// (bitonic network, 55 compare-exchange stages, one pair per thread per stage) and
// writes its first 32 to cand; k1 merges a row's tile lists, one warp per row: the
// next list read in reverse (ascending), an elementwise max, a five-stage bitonic merge.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ cand, int R, int C)
{
    __shared__ float s[1024];
    const int t = threadIdx.x;
    const int tile = blockIdx.x;
    const int r = blockIdx.y;
    const int tiles = (C + 1023) >> 10;
    const float* row = x + (long long)r * C;
    const int c0 = tile * 1024 + t;
    s[t] = c0 < C ? row[c0] : __uint_as_float(0xff800000u);
    s[t + 512] = c0 + 512 < C ? row[c0 + 512] : __uint_as_float(0xff800000u);
    for (int k = 2; k <= 1024; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            __syncthreads();
            const int i = 2 * t - (t & (j - 1));
            const float a = s[i];
            const float b = s[i + j];
            const bool down = (i & k) == 0;
            if (down ? a < b : a > b) {
                s[i] = b;
                s[i + j] = a;
            }
        }
    }
    __syncthreads();
    if (t < 32) cand[((long long)r * tiles + tile) * 32 + t] = s[t];
}

extern "C" __global__ void k1(const float* __restrict__ cand, float* __restrict__ out, int R, int C)
{
    const int lane = threadIdx.x & 31;
    const int r = blockIdx.x * 8 + (threadIdx.x >> 5);
    if (r >= R) return;
    const int tiles = (C + 1023) >> 10;
    const float* lists = cand + (long long)r * tiles * 32;
    float mine = lists[lane];
    for (int tile = 1; tile < tiles; ++tile) {
        mine = fmaxf(mine, lists[tile * 32 + 31 - lane]);
#pragma unroll
        for (int j = 16; j > 0; j >>= 1) {
            const float o = __shfl_xor_sync(0xffffffffu, mine, j);
            mine = (lane & j) == 0 ? fmaxf(mine, o) : fminf(mine, o);
        }
    }
    out[(long long)r * 32 + lane] = mine;
}
