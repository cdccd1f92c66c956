// Same tiles and block; the next A and B elements are loaded into registers
// while the current tiles are multiplied, then stored after the second barrier.
extern "C" __global__ void k0(const float* __restrict__ A, const float* __restrict__ B,
                              float* __restrict__ C, int M, int N, int K)
{
    __shared__ float As[32][32];
    __shared__ float Bs[32][32];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * 32 + ty;
    const int col = blockIdx.x * 32 + tx;
    const int tiles = K / 32;

    float a = A[row * K + tx];
    float b = B[ty * N + col];
    float acc = 0.0f;
    for (int t = 0; t < tiles; ++t) {
        As[ty][tx] = a;
        Bs[tx][ty] = b;
        __syncthreads();
        if (t + 1 < tiles) {
            a = A[row * K + (t + 1) * 32 + tx];
            b = B[((t + 1) * 32 + ty) * N + col];
        }
        for (int k = 0; k < 32; ++k)
            acc += As[ty][k] * Bs[tx][k];
        __syncthreads();
    }
    C[row * N + col] = acc;
}
