// Each thread owns 4 consecutive nonzeros, whatever rows they belong to. It
// finds the row holding its first nonzero by binary search in rowptr (the
// last r with rowptr[r] <= first), then walks its nonzeros one at a time;
// each time it crosses into the next row it adds the finished partial sum to
// y with atomicAdd (y is zeroed before the launch). A row longer than 4 is
// summed by several threads: the lanes' last rows ascend with the lane, so
// lanes ending on one row are neighbours, and a five-step segmented shuffle
// sum leaves each such row's total in its lowest lane, which adds it to y.
// Threads past the last nonzero own no row (r = -1) but stay for the shuffles.
extern "C" __global__ void k0(const int* __restrict__ rowptr, const int* __restrict__ col,
                              const float* __restrict__ val, const float* __restrict__ x,
                              float* __restrict__ y, int rows)
{
    const int nnz = rowptr[rows];
    const int lane = threadIdx.x & 31;
    const int first = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
    int r = -1;
    float s = 0.f;
    if (first < nnz) {
        const int last = min(first + 4, nnz);
        int lo = 0, hi = rows;
        while (hi - lo > 1) {
            const int m = (lo + hi) >> 1;
            if (rowptr[m] <= first) lo = m; else hi = m;
        }
        r = lo;
        int next = rowptr[r + 1];
        for (int k = first; k < last; ++k) {
            while (k >= next) {
                atomicAdd(&y[r], s);
                s = 0.f;
                ++r;
                next = rowptr[r + 1];
            }
            s += val[k] * x[col[k]];
        }
    }
    for (int o = 1; o < 32; o <<= 1) {
        const float v = __shfl_down_sync(0xffffffffu, s, o);
        const int rv = __shfl_down_sync(0xffffffffu, r, o);
        if (lane + o < 32 && rv == r) s += v;
    }
    const int below = __shfl_up_sync(0xffffffffu, r, 1);
    if (r >= 0 && (lane == 0 || below != r)) atomicAdd(&y[r], s);
}
