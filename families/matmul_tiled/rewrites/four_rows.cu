// 32x8 blocks; each thread computes rows ty, ty+8, ty+16 and ty+24 of the
// block's 32x32 output tile, reusing each B value it reads four times.
// Tile layouts (including the transposed B tile) are unchanged.
extern "C" __global__ void k0(const float* __restrict__ A, const float* __restrict__ B,
                              float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[32][32];
    __shared__ float Bs[32][32];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * 32 + ty;
    const int col = blockIdx.x * 32 + tx;

    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int t = 0; t < K / 32; ++t) {
        for (int j = 0; j < 4; ++j) {
            As[ty + 8 * j][tx] = A[(row + 8 * j) * K + t * 32 + tx];
            Bs[tx][ty + 8 * j] = B[(t * 32 + ty + 8 * j) * N + col];
        }
        __syncthreads();
        for (int k = 0; k < 32; ++k) {
            const float b = Bs[tx][k];
            for (int j = 0; j < 4; ++j)
                acc[j] += As[ty + 8 * j][k] * b;
        }
        __syncthreads();
    }
    for (int j = 0; j < 4; ++j)
        C[(row + 8 * j) * N + col] = acc[j];
}
