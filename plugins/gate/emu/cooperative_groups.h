// SparkTrace CPU emulator: the part of CUDA's cooperative_groups a kernel may use.
// grid.sync() is a grid-wide barrier (the launch must set cooperative = true);
// a block's sync() is __syncthreads(); tiles map onto the warp operations.
#pragma once
#include "cuda_emu.h"

namespace cooperative_groups {

struct grid_group {
    void sync() const { emu_grid_sync("grid.sync()"); }
    bool is_valid() const { return emu_cooperative != 0; }
    unsigned long long block_rank() const {
        return blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    }
    unsigned long long num_blocks() const { return (unsigned long long)gridDim.x * gridDim.y * gridDim.z; }
    unsigned long long thread_rank() const {
        unsigned long long t = threadIdx.x + blockDim.x * (threadIdx.y + (unsigned long long)blockDim.y * threadIdx.z);
        return block_rank() * ((unsigned long long)blockDim.x * blockDim.y * blockDim.z) + t;
    }
    unsigned long long num_threads() const { return num_blocks() * blockDim.x * blockDim.y * blockDim.z; }
    unsigned long long size() const { return num_threads(); }
    dim3 group_dim() const { return gridDim; }
    dim3 dim_blocks() const { return gridDim; }
    dim3 block_index() const { return blockIdx; }
};

struct thread_block {
    void sync() const { emu_syncthreads("this_thread_block().sync()"); }
    unsigned thread_rank() const { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
    unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
    unsigned num_threads() const { return size(); }
    dim3 group_index() const { return blockIdx; }
    dim3 thread_index() const { return threadIdx; }
    dim3 group_dim() const { return blockDim; }
    dim3 dim_threads() const { return blockDim; }
};

// The thread-block cluster (a cluster of one without __cluster_dims__). Its blocks run
// concurrently; sync() is a barrier over every thread of every block of the cluster;
// map_shared_rank gives the same variable in another block's shared memory.
struct cluster_group {
    using arrival_token = struct {};  // as in CUDA: barrier_wait waits for this thread's last arrival
    static void sync() { emu_cluster_wait(emu_cluster_arrive("cluster.sync()"), "cluster.sync()"); }
    static arrival_token barrier_arrive() {
        emu_cur->ctoken = emu_cluster_arrive("cluster.barrier_arrive()");
        return arrival_token();
    }
    static void barrier_wait() { emu_cluster_wait(emu_cur->ctoken, "cluster.barrier_wait()"); }
    static void barrier_wait(arrival_token&&) { barrier_wait(); }
    static unsigned int block_rank() { return emu_cur->blk->crank; }
    static unsigned int num_blocks() { return emu_cur->blk->cl->n; }
    static dim3 dim_blocks() { return emu_cluster_dim; }
    static dim3 block_index() {
        return dim3(blockIdx.x % emu_cluster_dim.x, blockIdx.y % emu_cluster_dim.y, blockIdx.z % emu_cluster_dim.z);
    }
    static dim3 thread_index() {
        dim3 b = block_index();
        return dim3(b.x * blockDim.x + threadIdx.x, b.y * blockDim.y + threadIdx.y, b.z * blockDim.z + threadIdx.z);
    }
    static unsigned int thread_rank() {
        return block_rank() * (blockDim.x * blockDim.y * blockDim.z) + threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    }
    static unsigned int num_threads() { return num_blocks() * blockDim.x * blockDim.y * blockDim.z; }
    static unsigned int size() { return num_threads(); }
    static dim3 dim_threads() { return dim3(blockDim.x * emu_cluster_dim.x, blockDim.y * emu_cluster_dim.y, blockDim.z * emu_cluster_dim.z); }
    static bool is_valid() { return true; }
    template <class T>
    static T* map_shared_rank(T* addr, int rank) { return (T*)emu_cluster_map((const void*)addr, (unsigned)rank); }
    static unsigned int query_shared_rank(const void* addr) { return (unsigned)emu_cluster_query(addr); }
};

static inline grid_group this_grid() { return grid_group(); }
static inline cluster_group this_cluster() { return cluster_group(); }
static inline void sync(const cluster_group& c) { c.sync(); }
static inline thread_block this_thread_block() { return thread_block(); }
static inline void sync(const grid_group& g) { g.sync(); }
static inline void sync(const thread_block& b) { b.sync(); }

template <unsigned N>
struct thread_block_tile {
    static_assert(N >= 1 && N <= 32 && (N & (N - 1)) == 0, "tile size must be a power of two up to 32");
    unsigned mask() const {
        unsigned base = emu_cur->lane & ~(N - 1);
        return (N == 32 ? 0xffffffffu : ((1u << N) - 1u)) << base;
    }
    void sync() const { __syncwarp(mask()); }
    unsigned thread_rank() const { return emu_cur->lane & (N - 1); }
    unsigned size() const { return N; }
    unsigned num_threads() const { return N; }
    unsigned meta_group_rank() const { return (emu_cur->linear) / N; }
    template <class T> T shfl(T v, int src) const { return __shfl_sync(mask(), v, src, N); }
    template <class T> T shfl_down(T v, unsigned d) const { return __shfl_down_sync(mask(), v, d, N); }
    template <class T> T shfl_up(T v, unsigned d) const { return __shfl_up_sync(mask(), v, d, N); }
    template <class T> T shfl_xor(T v, int m) const { return __shfl_xor_sync(mask(), v, m, N); }
    unsigned ballot(int p) const { return __ballot_sync(mask(), p) >> (emu_cur->lane & ~(N - 1)); }
    int any(int p) const { return __any_sync(mask(), p); }
    int all(int p) const { return __all_sync(mask(), p); }
};

template <unsigned N>
static inline thread_block_tile<N> tiled_partition(const thread_block&) { return thread_block_tile<N>(); }

}  // namespace cooperative_groups
