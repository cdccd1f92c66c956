// Copy, then passes of root[i] = root[root[i]] in place. A pass may read an
// entry another thread has already updated: both the old and the new value are
// ancestors of i, so every pass at least doubles each node's distance moved up
// (or reaches the root), as a pass between two buffers would.
extern "C" __global__ void k0(const int* __restrict__ parent, int* root, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) root[i] = parent[i];
}

extern "C" __global__ void k1(int* root, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) root[i] = root[root[i]];
}
