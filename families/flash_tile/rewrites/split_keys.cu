// Split over keys: k0 is the start's loop over half of the keys (blockIdx.z picks
// the half) and writes its unnormalised fp32 O, row max and row sum to scratch;
// k1 merges the two halves of each row by their max and sum and writes fp16 O.
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;

#define HD 64    // head dimension
#define BR 64    // query rows per CTA
#define BC 32    // keys per step
#define LDK 72   // halves per K/V row in shared memory
#define LDP 40   // halves per P row

extern "C" __global__ void k0(const __half* __restrict__ q, const __half* __restrict__ k,
                              const __half* __restrict__ v, float* __restrict__ po,
                              float* __restrict__ pm, float* __restrict__ pl,
                              int SQ, int SK, float scale)
{
    __shared__ __align__(32) __half ks[BC * LDK];
    __shared__ __align__(32) __half vs[BC * LDK];
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

    const int nk = SK / 2, k1st = blockIdx.z * nk;
    for (int kb = k1st; kb < k1st + nk; kb += BC) {
        for (int i = tid; i < BC * HD / 8; i += 128) {
            const int row = i >> 3, c = (i & 7) * 8;
            *(uint4*)&ks[row * LDK + c] = *(const uint4*)&kh[(long long)(kb + row) * HD + c];
            *(uint4*)&vs[row * LDK + c] = *(const uint4*)&vh[(long long)(kb + row) * HD + c];
        }
        __syncthreads();

        // S = Q K^T for 16 rows x 32 keys
#pragma unroll
        for (int n = 0; n < 2; ++n) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> sf;
            wmma::fill_fragment(sf, 0.0f);
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> kf;
                wmma::load_matrix_sync(kf, ks + n * 16 * LDK + kk * 16, LDK);
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
                wmma::load_matrix_sync(vf, vs + kk * 16 * LDK + n * 16, LDK);
                wmma::mma_sync(of, pf[kk], vf, of);
            }
            wmma::store_matrix_sync(os[w] + n * 16, of, HD, wmma::mem_row_major);
        }
        __syncthreads();
    }

    // unnormalised O, max and sum of this half
    const long long row0 = (blockIdx.z * gridDim.y + head) * SQ + q0;
    if (hf == 0) {
        pm[row0 + r] = m;
        pl[row0 + r] = l;
    }
    for (int i = lane; i < 16 * HD / 4; i += 32)
        ((float4*)&po[row0 * HD])[i] = ((float4*)os[w])[i];
}

// One thread per 4 output columns: O = (a0 O0 + a1 O1) / (a0 l0 + a1 l1), a_i = exp(m_i - max).
extern "C" __global__ void k1(const float* __restrict__ po, const float* __restrict__ pm,
                              const float* __restrict__ pl, __half* __restrict__ o, int BH, int SQ)
{
    const int rows = BH * SQ;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)rows * (HD / 4)) return;
    const long long row = i / (HD / 4);
    const float m0 = pm[row], m1 = pm[rows + row];
    const float mm = fmaxf(m0, m1);
    const float a0 = expf(m0 - mm), a1 = expf(m1 - mm);
    const float inv = 1.0f / (a0 * pl[row] + a1 * pl[rows + row]);
    const float4 x = ((const float4*)po)[i];
    const float4 y = ((const float4*)po)[(long long)rows * (HD / 4) + i];
    __half2* dst = (__half2*)&o[i * 4];
    dst[0] = __floats2half2_rn((a0 * x.x + a1 * y.x) * inv, (a0 * x.y + a1 * y.y) * inv);
    dst[1] = __floats2half2_rn((a0 * x.z + a1 * y.z) * inv, (a0 * x.w + a1 * y.w) * inv);
}
