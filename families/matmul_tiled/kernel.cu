// C = A * B in fp32, row-major: A is M x K, B is K x N, C is M x N.
// 32x32 blocks, one output per thread, 32x32 tiles of A and B in shared memory.
// The B tile is stored transposed (Bs[column][k]) so that the inner loop reads
// both tiles along k; all 32 lanes of a warp then read the same bank of Bs.
extern "C" __global__ void k0(const float* __restrict__ A, const float* __restrict__ B,
                              float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[32][32];
    __shared__ float Bs[32][32];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * 32 + ty;
    const int col = blockIdx.x * 32 + tx;

    float acc = 0.0f;
    for (int t = 0; t < K / 32; ++t) {
        As[ty][tx] = A[row * K + t * 32 + tx];
        Bs[tx][ty] = B[(t * 32 + ty) * N + col];
        __syncthreads();
        for (int k = 0; k < 32; ++k)
            acc += As[ty][k] * Bs[tx][k];
        __syncthreads();
    }
    C[row * N + col] = acc;
}
