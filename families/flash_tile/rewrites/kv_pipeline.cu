// As the start, but K and V tiles are double-buffered: each thread issues its
// 16-byte copies of the next tile with cuda::memcpy_async into a thread-scope
// cuda::pipeline (cp.async), then waits for the current tile's copies.
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda/pipeline>
using namespace nvcuda;

#define HD 64    // head dimension
#define BR 64    // query rows per CTA
#define BC 32    // keys per step
#define LDK 72   // halves per K/V row in shared memory
#define LDP 40   // halves per P row

extern "C" __global__ void k0(const __half* __restrict__ q, const __half* __restrict__ k,
                              const __half* __restrict__ v, __half* __restrict__ o,
                              int SQ, int SK, float scale)
{
    __shared__ __align__(32) __half ks[2][BC * LDK];
    __shared__ __align__(32) __half vs[2][BC * LDK];
    __shared__ __align__(32) float ss[4][16 * BC];
    __shared__ __align__(32) __half ps[4][16 * LDP];
    __shared__ __align__(32) float os[4][16 * HD];
    __shared__ float al[4][16];

    const int tid = threadIdx.x, w = tid >> 5, lane = tid & 31;
    const long long head = blockIdx.y;
    const int q0 = blockIdx.x * BR + w * 16;
    const __half* kh = k + head * SK * HD;
    const __half* vh = v + head * SK * HD;

    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> qf[4];
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
        wmma::load_matrix_sync(qf[kk], q + (head * SQ + q0) * HD + kk * 16, HD);
    for (int i = lane; i < 16 * HD; i += 32) os[w][i] = 0.0f;

    const int r = lane >> 1, hf = lane & 1;   // this lane's row and half of the S row
    float m = __int_as_float(0xff800000), l = 0.0f;

    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    for (int s = 0; s < 2 && s * BC < SK; ++s) {
        pipe.producer_acquire();
        for (int i = tid; i < BC * HD / 8; i += 128) {
            const int row = i >> 3, c = (i & 7) * 8;
            cuda::memcpy_async(&ks[s][row * LDK + c], &kh[(long long)(s * BC + row) * HD + c], cuda::aligned_size_t<16>(16), pipe);
            cuda::memcpy_async(&vs[s][row * LDK + c], &vh[(long long)(s * BC + row) * HD + c], cuda::aligned_size_t<16>(16), pipe);
        }
        pipe.producer_commit();
    }

    for (int kb = 0, st = 0; kb < SK; kb += BC, st ^= 1) {
        pipe.consumer_wait();
        __syncthreads();
        const __half* kt = ks[st];
        const __half* vt = vs[st];

        // S = Q K^T for 16 rows x 32 keys
#pragma unroll
        for (int n = 0; n < 2; ++n) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> sf;
            wmma::fill_fragment(sf, 0.0f);
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> kf;
                wmma::load_matrix_sync(kf, kt + n * 16 * LDK + kk * 16, LDK);
                wmma::mma_sync(sf, qf[kk], kf, sf);
            }
            wmma::store_matrix_sync(ss[w] + n * 16, sf, BC, wmma::mem_row_major);
        }
        __syncwarp();

        // running max and sum; P = exp(S * scale - m) in fp16
        const float* srow = ss[w] + r * BC + hf * 16;
        float x[16];
        float mx = __int_as_float(0xff800000);
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            x[j] = srow[(j + r) & 15];
            mx = fmaxf(mx, x[j]);
        }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        const float mn = fmaxf(m, mx * scale);
        const float alpha = expf(m - mn);
        float sum = 0.0f;
        __half* prow = ps[w] + r * LDP + hf * 16;
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            const float p = expf(x[j] * scale - mn);
            sum += p;
            prow[(j + r) & 15] = __float2half_rn(p);
        }
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        l = l * alpha + sum;
        m = mn;
        if (hf == 0) al[w][r] = alpha;
        __syncwarp();

        // O = alpha * O + P V, with O in shared memory
        for (int i = lane; i < 16 * HD / 4; i += 32) {
            float4 t = ((float4*)os[w])[i];
            const float a = al[w][i >> 4];
            t.x *= a; t.y *= a; t.z *= a; t.w *= a;
            ((float4*)os[w])[i] = t;
        }
        __syncwarp();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> pf[2];
#pragma unroll
        for (int kk = 0; kk < 2; ++kk)
            wmma::load_matrix_sync(pf[kk], ps[w] + kk * 16, LDP);
#pragma unroll
        for (int n = 0; n < 4; ++n) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> of;
            wmma::load_matrix_sync(of, os[w] + n * 16, HD, wmma::mem_row_major);
#pragma unroll
            for (int kk = 0; kk < 2; ++kk) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> vf;
                wmma::load_matrix_sync(vf, vt + kk * 16 * LDK + n * 16, LDK);
                wmma::mma_sync(of, pf[kk], vf, of);
            }
            wmma::store_matrix_sync(os[w] + n * 16, of, HD, wmma::mem_row_major);
        }
        __syncthreads();
        pipe.consumer_release();
        // refill this stage with the tile two steps ahead
        if (kb + 2 * BC < SK) {
            pipe.producer_acquire();
            for (int i = tid; i < BC * HD / 8; i += 128) {
                const int row = i >> 3, c = (i & 7) * 8;
                cuda::memcpy_async(&ks[st][row * LDK + c], &kh[(long long)(kb + 2 * BC + row) * HD + c], cuda::aligned_size_t<16>(16), pipe);
                cuda::memcpy_async(&vs[st][row * LDK + c], &vh[(long long)(kb + 2 * BC + row) * HD + c], cuda::aligned_size_t<16>(16), pipe);
            }
            pipe.producer_commit();
        }
    }

    // O / l, written as fp16
    if (hf == 0) al[w][r] = 1.0f / l;
    __syncwarp();
    for (int i = lane; i < 16 * HD / 4; i += 32) {
        const float4 t = ((float4*)os[w])[i];
        const float a = al[w][i >> 4];
        __half2* dst = (__half2*)&o[(head * SQ + q0 + (i >> 4)) * HD + (i & 15) * 4];
        dst[0] = __floats2half2_rn(t.x * a, t.y * a);
        dst[1] = __floats2half2_rn(t.z * a, t.w * a);
    }
}
