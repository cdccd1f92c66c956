// The start's two launches and one thread per pair, but each 256-thread CTA
// first stages its 4 tokens of one head (1 KB) in shared memory with cp.async
// (cuda::memcpy_async into a thread-scope cuda::pipeline) and rotates from there.
#include <cuda_bf16.h>
#include <cuda/pipeline>

extern "C" __global__ void k0(const __nv_bfloat16* __restrict__ x, const float* __restrict__ cs,
                              const int* __restrict__ pos, __nv_bfloat16* __restrict__ y, int T)
{
    __shared__ __align__(16) __nv_bfloat16 xs[4 * 128];
    const int t0 = blockIdx.x * 4, nt = min(4, T - t0);
    const long long b0 = ((long long)blockIdx.y * T + t0) * 128;
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    pipe.producer_acquire();
    if (threadIdx.x < nt * 16)
        cuda::memcpy_async(&xs[threadIdx.x * 8], &x[b0 + threadIdx.x * 8], cuda::aligned_size_t<16>(16), pipe);
    pipe.producer_commit();
    pipe.consumer_wait();
    __syncthreads();

    const int j = threadIdx.x & 63, tl = threadIdx.x >> 6;
    if (tl < nt) {
        const float2 c = ((const float2*)cs)[(long long)pos[t0 + tl] * 64 + j];
        const float x1 = __bfloat162float(xs[tl * 128 + j]);
        const float x2 = __bfloat162float(xs[tl * 128 + j + 64]);
        y[b0 + tl * 128 + j] = __float2bfloat16_rn(x1 * c.x - x2 * c.y);
        y[b0 + tl * 128 + j + 64] = __float2bfloat16_rn(x2 * c.x + x1 * c.y);
    }
    pipe.consumer_release();
}
