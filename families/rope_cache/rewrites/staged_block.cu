// Head-major order kept (grid.y = head); each 256-thread CTA stages one head's
// block of 32 tokens (8 KB) in shared memory with cp.async (cuda::memcpy_async
// into a thread-scope cuda::pipeline), then each thread rotates 8 consecutive
// pairs of one token from shared memory, reading their cos/sin as four float4
// and writing 16-byte vectors.
#include <cuda_bf16.h>
#include <cuda/pipeline>

extern "C" __global__ void k0(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                              const float* __restrict__ cs, const int* __restrict__ pos,
                              __nv_bfloat16* __restrict__ qo, __nv_bfloat16* __restrict__ ko, int T, int HQ)
{
    __shared__ __align__(16) __nv_bfloat16 xs[32 * 128];
    const int h = blockIdx.y, t0 = blockIdx.x * 32, nt = min(32, T - t0);
    const __nv_bfloat16* x = h < HQ ? q + ((long long)h * T + t0) * 128 : k + ((long long)(h - HQ) * T + t0) * 128;
    __nv_bfloat16* y = h < HQ ? qo + ((long long)h * T + t0) * 128 : ko + ((long long)(h - HQ) * T + t0) * 128;
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    pipe.producer_acquire();
    for (int i = threadIdx.x; i < nt * 16; i += 256)
        cuda::memcpy_async(&xs[i * 8], &x[i * 8], cuda::aligned_size_t<16>(16), pipe);
    pipe.producer_commit();
    pipe.consumer_wait();
    __syncthreads();

    const int tl = threadIdx.x >> 3, g = (threadIdx.x & 7) * 8;
    if (tl < nt) {
        const float4* c4 = (const float4*)(cs + ((long long)pos[t0 + tl] * 64 + g) * 2);
        const uint4 a = *(const uint4*)&xs[tl * 128 + g];
        const uint4 b = *(const uint4*)&xs[tl * 128 + g + 64];
        const __nv_bfloat162* a2 = (const __nv_bfloat162*)&a;
        const __nv_bfloat162* b2 = (const __nv_bfloat162*)&b;
        uint4 ra, rb;
        __nv_bfloat162* ra2 = (__nv_bfloat162*)&ra;
        __nv_bfloat162* rb2 = (__nv_bfloat162*)&rb;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const float4 c = c4[e];
            const float2 x1 = __bfloat1622float2(a2[e]);
            const float2 x2 = __bfloat1622float2(b2[e]);
            ra2[e] = __floats2bfloat162_rn(x1.x * c.x - x2.x * c.y, x1.y * c.z - x2.y * c.w);
            rb2[e] = __floats2bfloat162_rn(x2.x * c.x + x1.x * c.y, x2.y * c.z + x1.y * c.w);
        }
        *(uint4*)(y + tl * 128 + g) = ra;
        *(uint4*)(y + tl * 128 + g + 64) = rb;
    }
    pipe.consumer_release();
}
