// CUDA C++ twins of examples/bulk_copy.py and examples/tma_copy.py, for the
// benchmark: the same algorithm, ring, launch shape and instructions, written
// the way a CUDA C++ programmer writes them without CUTLASS/cuda::ptx: raw
// inline PTX for cp.async.bulk, cp.async.bulk.tensor and the mbarriers.
// Built with twins.cu into the benchmark's shared library (sm_90a); each
// extern "C" launcher enqueues one launch on the legacy default stream and
// returns cudaGetLastError(), or -1 for a configuration not instantiated.
//
// The TMA twin receives the tensor maps as pointers to the same 128-byte
// maps in device memory that the Numba kernels get (ac.TensorMap buffers)
// and fences the tensormap proxy on them the same way.
#include <cuda_runtime.h>
#include "twins_tiles.cuh"
#include <stdint.h>

namespace bulk_twin {

__device__ __forceinline__ uint32_t smem(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(smem(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(bar)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void mbar_wait_parity(uint64_t* bar, uint32_t parity) {
    asm volatile(
        "{\n"
        " .reg .pred p;\n"
        " WAIT:\n"
        " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        " @!p bra WAIT;\n"
        "}\n" ::"r"(smem(bar)),
        "r"(parity)
        : "memory");
}

__device__ __forceinline__ void fence_proxy_async_shared() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// shared::cluster destination: the form every PTX 8.x ptxas accepts (for the
// executing CTA's own shared memory it is the shared::cta form).
__device__ __forceinline__ void bulk_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
            smem(dst)),
        "l"(src), "r"(bytes), "r"(smem(bar))
        : "memory");
}

__device__ __forceinline__ void bulk_s2g(void* dst, const void* src, uint32_t bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(smem(src)),
                 "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }

template <int N>
__device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

template <int N>
__device__ __forceinline__ void bulk_wait() {
    asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

__device__ __forceinline__ void tensormap_fence(const void* map) {
    asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;" ::"l"(map) : "memory");
}

__device__ __forceinline__ void tensormap_prefetch(const void* map) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}

// coordinates innermost first, as PTX lists them
__device__ __forceinline__ void tma_load_2d(void* dst, const void* map, int c0, int c1, uint64_t* bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem(dst)),
        "l"(map), "r"(c0), "r"(c1), "r"(smem(bar))
        : "memory");
}

__device__ __forceinline__ void tma_store_2d(const void* map, int c0, int c1, const void* src) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(map),
                 "r"(c0), "r"(c1), "r"(smem(src))
                 : "memory");
}

// --- bulk copy ------------------------------------------------------------------
// Mirror of examples/bulk_copy.py: one thread per block runs the ring; the
// block's tiles are base + i * stride for i < count (run 0: grid stride; run
// N: tiles b*N .. b*N+N-1); slot and parity follow the block-local i.
template <int STAGES, int CHUNK>
__global__ void __launch_bounds__(32) bulk_copy_k(const uint32_t* __restrict__ src, uint32_t* __restrict__ dst,
                                                  long long n, int run) {
    constexpr long long WORDS = CHUNK / 4;
    __shared__ __align__(128) uint32_t ring[STAGES][WORDS];
    __shared__ __align__(8) uint64_t full[STAGES];
    const long long ntiles = n / WORDS;
    const long long first = blockIdx.x, step = gridDim.x;
    long long base, stride, count;
    block_tiles(ntiles, run, base, stride, count);
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) mbar_init(&full[s], 1);
        fence_proxy_async_shared();
        for (int s = 0; s < STAGES; ++s) {
            if (s < count) {
                long long t = base + s * stride;
                mbar_arrive_expect_tx(&full[s], CHUNK);
                bulk_g2s(ring[s], src + t * WORDS, CHUNK, &full[s]);
            }
        }
        for (long long i = 0; i < count; ++i) {
            long long t = base + i * stride;
            int slot = (int)(i % STAGES);
            mbar_wait_parity(&full[slot], (uint32_t)((i / STAGES) & 1));
            bulk_s2g(dst + t * WORDS, ring[slot], CHUNK);
            bulk_commit();
            if (i > 0) {
                bulk_wait_read<1>();
                if (i + STAGES - 1 < count) {
                    long long nt = t + (STAGES - 1) * stride;
                    int prev = (int)((i - 1) % STAGES);
                    mbar_arrive_expect_tx(&full[prev], CHUNK);
                    bulk_g2s(ring[prev], src + nt * WORDS, CHUNK, &full[prev]);
                }
            }
        }
        bulk_wait<0>();
    }
    for (long long j = ntiles * WORDS + first * blockDim.x + threadIdx.x; j < n; j += step * blockDim.x)
        dst[j] = src[j];
}

// --- TMA tile copy -----------------------------------------------------------------
// Mirror of examples/tma_copy.py: 2-D boxes of BR x BC 4-byte elements,
// numbered row-major; the block's boxes are base + i * stride for i < count
// (run 0: grid stride; run N: boxes b*N .. b*N+N-1).
template <int STAGES, int BR, int BC>
__global__ void __launch_bounds__(32) tma_copy_k(const uint64_t* src_map, const uint64_t* dst_map, long long rows,
                                                 long long cols, int run) {
    constexpr uint32_t BYTES = BR * BC * 4;
    __shared__ __align__(128) uint32_t ring[STAGES][BR][BC];
    __shared__ __align__(8) uint64_t full[STAGES];
    const long long tiles_c = (cols + BC - 1) / BC;
    const long long ntiles = ((rows + BR - 1) / BR) * tiles_c;
    long long base, stride, count;
    block_tiles(ntiles, run, base, stride, count);
    if (threadIdx.x == 0 && count > 0) {
        for (int s = 0; s < STAGES; ++s) mbar_init(&full[s], 1);
        fence_proxy_async_shared();
        tensormap_fence(src_map);
        tensormap_fence(dst_map);
        tensormap_prefetch(src_map);
        tensormap_prefetch(dst_map);
        for (int s = 0; s < STAGES; ++s) {
            if (s < count) {
                long long t = base + s * stride;
                long long tr = t / tiles_c;
                mbar_arrive_expect_tx(&full[s], BYTES);
                tma_load_2d(ring[s], src_map, (int)((t - tr * tiles_c) * BC), (int)(tr * BR), &full[s]);
            }
        }
        for (long long i = 0; i < count; ++i) {
            long long t = base + i * stride;
            int slot = (int)(i % STAGES);
            mbar_wait_parity(&full[slot], (uint32_t)((i / STAGES) & 1));
            long long tr = t / tiles_c;
            tma_store_2d(dst_map, (int)((t - tr * tiles_c) * BC), (int)(tr * BR), ring[slot]);
            bulk_commit();
            if (i > 0) {
                bulk_wait_read<1>();
                if (i + STAGES - 1 < count) {
                    long long nt = t + (STAGES - 1) * stride;
                    int prev = (int)((i - 1) % STAGES);
                    long long nr = nt / tiles_c;
                    mbar_arrive_expect_tx(&full[prev], BYTES);
                    tma_load_2d(ring[prev], src_map, (int)((nt - nr * tiles_c) * BC), (int)(nr * BR), &full[prev]);
                }
            }
        }
        bulk_wait<0>();
    }
}

}  // namespace bulk_twin

#define BULK_CASE(S, C)                                                                             \
    if (stages == S && chunk_bytes == C) {                                                          \
        bulk_twin::bulk_copy_k<S, C><<<grid, 32>>>((const uint32_t*)src, (uint32_t*)dst, n, run); \
        return (int)cudaGetLastError();                                                             \
    }

// The configurations of bulk_copy.SWEEP and RUN_SWEEP (stages, chunk_bytes);
// run 0: grid stride, else the tiles per block.
extern "C" int twin_bulk_copy(const void* src, void* dst, long long n, int stages, int chunk_bytes, int grid,
                              int run) {
    BULK_CASE(4, 8192)
    BULK_CASE(5, 8192)
    BULK_CASE(8, 4096)
    BULK_CASE(3, 12288)
    BULK_CASE(2, 16384)
    BULK_CASE(6, 4096)
    BULK_CASE(4, 4096)
    return -1;
}

#define TMA_CASE(S, R, C)                                                                                 \
    if (stages == S && box_rows == R && box_cols == C) {                                                  \
        bulk_twin::tma_copy_k<S, R, C><<<grid, 32>>>((const uint64_t*)src_map, (const uint64_t*)dst_map, \
                                                     rows, cols, run);                                    \
        return (int)cudaGetLastError();                                                                   \
    }

// The configurations of tma_copy.SWEEP (stages, (box rows, box cols)); its
// RUN_SWEEP uses the same shapes.  run 0: grid stride, else boxes per block.
extern "C" int twin_tma_copy(const void* src_map, const void* dst_map, long long rows, long long cols, int stages,
                             int box_rows, int box_cols, int grid, int run) {
    TMA_CASE(4, 32, 64)
    TMA_CASE(5, 32, 64)
    TMA_CASE(2, 32, 128)
    TMA_CASE(2, 64, 64)
    TMA_CASE(5, 16, 128)
    TMA_CASE(8, 16, 64)
    TMA_CASE(4, 8, 256)
    return -1;
}
