// Roots of a forest: root[i] is the root of node i, following parent pointers
// (a root is its own parent).

// Start: 2 blocks of 256 threads per SM; each thread walks nodes in a grid-stride loop.
extern "C" __global__ void k0(const int* __restrict__ parent, int* __restrict__ root, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int y = parent[i];
        while (parent[y] != y) y = parent[y];
        root[i] = y;
    }
}
