// One thread per row, 32-thread blocks: a warp owns 32 rows. It walks them in
// 32x32 tiles: for each of its rows the 32 lanes load 32 consecutive columns
// (one 128-byte line) into a padded shared tile, and after __syncwarp() lane l
// adds the 32 values of row r0 + l from the tile.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int R, int C)
{
    __shared__ float tile[32][33];
    const int lane = threadIdx.x;
    const int r0 = blockIdx.x * 32;
    float s = 0.0f;
    for (int c0 = 0; c0 < C; c0 += 32) {
        for (int k = 0; k < 32; ++k) {
            const int r = r0 + k;
            tile[k][lane] = (r < R && c0 + lane < C) ? x[(long long)r * C + c0 + lane] : 0.0f;
        }
        __syncwarp();
        for (int k = 0; k < 32; ++k)
            s += tile[lane][k];
        __syncwarp();
    }
    if (r0 + lane < R) out[r0 + lane] = s;
}
