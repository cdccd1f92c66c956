// The start's three launches and tiles; each thread moves its 16 values as
// four int4 loads and stores. Warp w owns the tile's values [512w, 512w +
// 512) and lane l holds int4 number 32j + l of them for j < 4 (four
// consecutive values). k1 is the start's single-block scan of the tile sums.
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

static __device__ __forceinline__ int scan4x4(int4 (&v)[4], int lane)
{
    int carry = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        v[j].y += v[j].x;
        v[j].z += v[j].y;
        v[j].w += v[j].z;
        int x = v[j].w;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const int y = __shfl_up_sync(0xffffffffu, x, d);
            if (lane >= d) x += y;
        }
        const int add = x - v[j].w + carry;
        v[j].x += add;
        v[j].y += add;
        v[j].z += add;
        v[j].w += add;
        carry += __shfl_sync(0xffffffffu, x, 31);
    }
    return carry;
}

extern "C" __global__ void k0(const int* __restrict__ in, int* __restrict__ sums, int n)
{
    const int lane = threadIdx.x & 31;
    const int4* in4 = reinterpret_cast<const int4*>(in);
    const int base = blockIdx.x * 2048 + (threadIdx.x >> 5) * 128 + lane;
    int s = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        if (base + 32 * j < n / 4) {
            const int4 q = in4[base + 32 * j];
            s += (q.x + q.y) + (q.z + q.w);
        }
    }
    s = __reduce_add_sync(0xffffffffu, s);
    if (lane == 0) atomicAdd(&sums[blockIdx.x], s);
}

extern "C" __global__ void k1(int* __restrict__ sums, int n)
{
    __shared__ int tot[16];
    const int lane = threadIdx.x & 31;
    const int nb = (n + 8191) / 8192;
    int carry = 0;
    for (int c = 0; c < nb; c += 8192) {
        const int base = c + (threadIdx.x >> 5) * 512 + lane;
        int v[16], o[16];
#pragma unroll
        for (int j = 0; j < 16; ++j) o[j] = v[j] = base + 32 * j < nb ? sums[base + 32 * j] : 0;
        const int total = block_scan(v, tot);
#pragma unroll
        for (int j = 0; j < 16; ++j)
            if (base + 32 * j < nb) sums[base + 32 * j] = carry + v[j] - o[j];
        carry += total;
        __syncthreads();
    }
}

extern "C" __global__ void k2(const int* __restrict__ in, const int* __restrict__ sums,
                              int* __restrict__ out, int n)
{
    __shared__ int tot[16];
    const int lane = threadIdx.x & 31;
    const int w = threadIdx.x >> 5;
    const int4* in4 = reinterpret_cast<const int4*>(in);
    int4* out4 = reinterpret_cast<int4*>(out);
    const int base = blockIdx.x * 2048 + w * 128 + lane;
    int4 v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = base + 32 * j < n / 4 ? in4[base + 32 * j] : make_int4(0, 0, 0, 0);
    const int s = scan4x4(v, lane);
    if (lane == 0) tot[w] = s;
    __syncthreads();
    int off = sums[blockIdx.x];
    for (int k = 0; k < w; ++k) off += tot[k];
#pragma unroll
    for (int j = 0; j < 4; ++j)
        if (base + 32 * j < n / 4) out4[base + 32 * j] = make_int4(v[j].x + off, v[j].y + off, v[j].z + off, v[j].w + off);
}
