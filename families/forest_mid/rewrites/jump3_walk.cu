// Copy parent to jump, passes of jump[i] = jump[jump[i]] in place (the same
// argument as the other pass options), then one thread per node follows jump
// to its end. jump is not written while the last kernel walks it.
extern "C" __global__ void k0(const int* __restrict__ parent, int* jump, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) jump[i] = parent[i];
}

extern "C" __global__ void k1(int* jump, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) jump[i] = jump[jump[i]];
}

extern "C" __global__ void k2(const int* __restrict__ jump, int* __restrict__ root, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int y = jump[i];
    while (jump[y] != y) y = jump[y];
    root[i] = y;
}
