// The start's tiles in clusters of the 4 tiles along H of one column strip
// (__cluster_dims__(1, 4, 1), grid.y = 4): each CTA stages only its own 14
// rows (+ the W halo) from global memory, then copies its 3-row top and bottom
// halos from the neighbouring CTAs' shared memory (distributed shared memory)
// between two cluster barriers; compute as in the start.
#include <cuda_bf16.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#define TW 8
#define TH 14
#define TC 32

extern "C" __global__ void __cluster_dims__(1, 4, 1) k0(const __nv_bfloat16* __restrict__ x,
    const float* __restrict__ wt, const float* __restrict__ bias, __nv_bfloat16* __restrict__ y,
    int H, int W, int C)
{
    __shared__ __align__(16) __nv_bfloat16 xs[TH + 6][TW + 6][TC];
    __shared__ float ws[49][TC];
    cg::cluster_group cl = cg::this_cluster();
    const int ng = C / TC, n = blockIdx.z / ng, c0 = (blockIdx.z % ng) * TC;
    const int h0 = blockIdx.y * TH, w0 = blockIdx.x * TW, tid = threadIdx.x;
    const int rank = (int)cl.block_rank();   // == blockIdx.y: the cluster spans grid.y
    const __nv_bfloat16* xn = x + (long long)n * H * W * C;

    // own rows: ph = 3 .. 16; the image's top and bottom halos are zeros
    for (int i = tid; i < (TH + 6) * (TW + 6) * (TC / 8); i += 256) {
        const int v = i % (TC / 8), p = i / (TC / 8), pw = p % (TW + 6), ph = p / (TW + 6);
        const bool own = ph >= 3 && ph < TH + 3;
        if (!own && !(ph < 3 && rank == 0) && !(ph >= TH + 3 && rank == 3)) continue;
        const int gh = h0 - 3 + ph, gw = w0 - 3 + pw;
        uint4 val = make_uint4(0u, 0u, 0u, 0u);
        if (own && gh < H && gw >= 0 && gw < W)
            val = *(const uint4*)&xn[((long long)gh * W + gw) * C + c0 + v * 8];
        *(uint4*)&xs[ph][pw][v * 8] = val;
    }
    for (int i = tid; i < 49 * TC; i += 256) ws[i / TC][i % TC] = wt[(i / TC) * C + c0 + i % TC];
    cl.sync();
    // halo rows from the neighbours: top = rows 11..13 of rank - 1, bottom = rows 0..2 of rank + 1
    for (int i = tid; i < 2 * 3 * (TW + 6) * (TC / 8); i += 256) {
        const int v = i % (TC / 8), p = i / (TC / 8), pw = p % (TW + 6), r = p / (TW + 6);
        const int up = r < 3, ph = up ? r : TH + r;
        if ((up && rank == 0) || (!up && rank == 3)) continue;
        const __nv_bfloat16 (*nb)[TW + 6][TC] = cl.map_shared_rank(xs, up ? rank - 1 : rank + 1);
        *(uint4*)&xs[ph][pw][v * 8] = *(const uint4*)&nb[up ? ph + TH : ph - TH][pw][v * 8];
    }
    cl.sync();

    const int c = tid & 31, tw = tid >> 5, gw = w0 + tw;
    if (gw >= W) return;
    const float b = bias[c0 + c];
    for (int th = 0; th < TH && h0 + th < H; ++th) {
        float acc = b;
        for (int i = 0; i < 7; ++i)
            for (int j = 0; j < 7; ++j)
                acc += __bfloat162float(xs[th + i][tw + j][c]) * ws[i * 7 + j][c];
        y[((long long)(n * H + h0 + th) * W + gw) * C + c0 + c] = __float2bfloat16_rn(acc);
    }
}
