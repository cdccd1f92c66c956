// 16x16 blocks and 16x16 tiles, one output per thread; the B tile is still
// stored transposed and both tiles are read along k.
extern "C" __global__ void k0(const float* __restrict__ A, const float* __restrict__ B,
                              float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[16][16];
    __shared__ float Bs[16][16];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * 16 + ty;
    const int col = blockIdx.x * 16 + tx;

    float acc = 0.0f;
    for (int t = 0; t < K / 16; ++t) {
        As[ty][tx] = A[row * K + t * 16 + tx];
        Bs[tx][ty] = B[(t * 16 + ty) * N + col];
        __syncthreads();
        for (int k = 0; k < 16; ++k)
            acc += As[ty][k] * Bs[tx][k];
        __syncthreads();
    }
    C[row * N + col] = acc;
}
