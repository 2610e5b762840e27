// CUDA C++ twins of the example kernels (numba_asynccopy/examples), for the
// benchmark: the same algorithms, tile shapes and launch shapes, written the
// way a CUDA C++ programmer would (cp.async through the pipeline primitives,
// float4/uint4 vector accesses).  Built by the benchmark with nvcc on the
// device (sm_90a) into a shared library; each extern "C" launcher enqueues one
// launch on the legacy default stream and returns cudaGetLastError().
#include <cuda_runtime.h>
#include "twins_tiles.cuh"
#include <cuda_pipeline_primitives.h>
#include <stdint.h>

// --- staged copy ------------------------------------------------------------
// Mirror of examples/staged_copy.py with chunk_bytes = 16.
template <int STAGES, int BLOCK, int PT>
__global__ void __launch_bounds__(BLOCK)
staged_copy_k(const uint32_t* __restrict__ src, uint32_t* __restrict__ dst, long long n, int run) {
    __shared__ __align__(16) uint4 ring[STAGES][PT][BLOCK];
    const int tid = threadIdx.x;
    const long long tile = (long long)BLOCK * PT * 4;  // words
    const long long ntiles = n / tile;
    const long long first = blockIdx.x, step = gridDim.x;
    // the block's tiles: base + i * stride for i < count (run 0: grid stride)
    long long base, stride, count;
    block_tiles(ntiles, run, base, stride, count);
    const uint4* s4 = reinterpret_cast<const uint4*>(src);
    uint4* d4 = reinterpret_cast<uint4*>(dst);
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < count) {
            long long t = base + s * stride;
#pragma unroll
            for (int k = 0; k < PT; ++k)
                __pipeline_memcpy_async(&ring[s][k][tid], &s4[t * BLOCK * PT + k * BLOCK + tid], 16);
        }
        __pipeline_commit();
    }
    for (long long i = 0; i < count; ++i) {
        long long t = base + i * stride;
        int slot = (int)((i + STAGES - 1) % STAGES);
        if (i + STAGES - 1 < count) {
            long long nt = t + (STAGES - 1) * stride;
#pragma unroll
            for (int k = 0; k < PT; ++k)
                __pipeline_memcpy_async(&ring[slot][k][tid], &s4[nt * BLOCK * PT + k * BLOCK + tid], 16);
        }
        __pipeline_commit();
        __pipeline_wait_prior(STAGES - 1);
        int cur = (int)(i % STAGES);
#pragma unroll
        for (int k = 0; k < PT; ++k) d4[t * BLOCK * PT + k * BLOCK + tid] = ring[cur][k][tid];
    }
    __pipeline_wait_prior(0);
    for (long long j = ntiles * tile + first * BLOCK + tid; j < n; j += step * BLOCK) dst[j] = src[j];
}

#define COPY_CASE(S, B, P)                                                        \
    if (stages == S && block == B && per_thread == P) {                           \
        staged_copy_k<S, B, P><<<grid, B>>>((const uint32_t*)src, (uint32_t*)dst, n, run); \
        return (int)cudaGetLastError();                                           \
    }

// The configurations of staged_copy.SWEEP and RUN_SWEEP (stages, block, per_thread).
extern "C" int twin_staged_copy(const void* src, void* dst, long long n, int stages, int block,
                                int per_thread, int grid, int run) {
    COPY_CASE(4, 256, 1)
    COPY_CASE(4, 256, 2)
    COPY_CASE(4, 128, 4)
    COPY_CASE(3, 256, 4)
    COPY_CASE(6, 128, 2)
    COPY_CASE(3, 128, 2)
    COPY_CASE(4, 128, 1)
    COPY_CASE(4, 128, 2)
    return -1;  // configuration not instantiated
}

// --- SGEMM --------------------------------------------------------------------
// Mirror of examples/sgemm.py: C (M,N) = AT(K,M)^T @ B(K,N), 128x128x8 tiles,
// 256 threads, 8x8 accumulators, the eight k steps of a tile unrolled (the
// example writes them out); STAGES == 1 is the synchronous variant.
template <int STAGES>
__device__ __forceinline__ void multiply(float (*As)[8][128], float (*Bs)[8][128], int slot,
                                         float acc[8][8], int ty, int tx) {
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        float4 a0 = *reinterpret_cast<const float4*>(&As[slot][k][4 * ty]);
        float4 a1 = *reinterpret_cast<const float4*>(&As[slot][k][64 + 4 * ty]);
        float4 b0 = *reinterpret_cast<const float4*>(&Bs[slot][k][4 * tx]);
        float4 b1 = *reinterpret_cast<const float4*>(&Bs[slot][k][64 + 4 * tx]);
        float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
        float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
            for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];
    }
}

template <int STAGES>
__global__ void __launch_bounds__(256)
sgemm_k(const float* __restrict__ AT, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) float As[STAGES][8][128];
    __shared__ __align__(16) float Bs[STAGES][8][128];
    const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;
    const int lr = tid / 32, lc = 4 * (tid % 32);
    const int m0 = blockIdx.y * 128, n0 = blockIdx.x * 128;
    const int ktiles = K / 8;
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;
    if (STAGES == 1) {
        for (int kt = 0; kt < ktiles; ++kt) {
            size_t k = (size_t)kt * 8 + lr;
            float4 va = *reinterpret_cast<const float4*>(&AT[k * M + m0 + lc]);
            float4 vb = *reinterpret_cast<const float4*>(&B[k * N + n0 + lc]);
            *reinterpret_cast<float4*>(&As[0][lr][lc]) = va;
            *reinterpret_cast<float4*>(&Bs[0][lr][lc]) = vb;
            __syncthreads();
            multiply<STAGES>(As, Bs, 0, acc, ty, tx);
            __syncthreads();
        }
    } else {
        for (int s = 0; s < STAGES - 1; ++s) {
            if (s < ktiles) {
                size_t k = (size_t)s * 8 + lr;
                __pipeline_memcpy_async(&As[s][lr][lc], &AT[k * M + m0 + lc], 16);
                __pipeline_memcpy_async(&Bs[s][lr][lc], &B[k * N + n0 + lc], 16);
            }
            __pipeline_commit();
        }
        int rslot = 0, wslot = STAGES - 1;
        for (int kt = 0; kt < ktiles; ++kt) {
            __pipeline_wait_prior(STAGES > 2 ? STAGES - 2 : 0);
            __syncthreads();
            int nk = kt + STAGES - 1;
            if (nk < ktiles) {
                size_t k = (size_t)nk * 8 + lr;
                __pipeline_memcpy_async(&As[wslot][lr][lc], &AT[k * M + m0 + lc], 16);
                __pipeline_memcpy_async(&Bs[wslot][lr][lc], &B[k * N + n0 + lc], 16);
            }
            __pipeline_commit();
            multiply<STAGES>(As, Bs, rslot, acc, ty, tx);
            rslot = rslot == STAGES - 1 ? 0 : rslot + 1;
            wslot = wslot == STAGES - 1 ? 0 : wslot + 1;
        }
        __pipeline_wait_prior(0);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            size_t r = (size_t)m0 + 64 * h + 4 * ty + i;
            int ii = 4 * h + i;
            *reinterpret_cast<float4*>(&C[r * N + n0 + 4 * tx]) =
                make_float4(acc[ii][0], acc[ii][1], acc[ii][2], acc[ii][3]);
            *reinterpret_cast<float4*>(&C[r * N + n0 + 64 + 4 * tx]) =
                make_float4(acc[ii][4], acc[ii][5], acc[ii][6], acc[ii][7]);
        }
}

extern "C" int twin_sgemm(const float* AT, const float* B, float* C, int M, int N, int K, int stages) {
    dim3 grid(N / 128, M / 128);
    switch (stages) {
        case 1: sgemm_k<1><<<grid, 256>>>(AT, B, C, M, N, K); break;
        case 2: sgemm_k<2><<<grid, 256>>>(AT, B, C, M, N, K); break;
        case 3: sgemm_k<3><<<grid, 256>>>(AT, B, C, M, N, K); break;
        case 4: sgemm_k<4><<<grid, 256>>>(AT, B, C, M, N, K); break;
        default: return -1;
    }
    return (int)cudaGetLastError();
}

// --- stencil ------------------------------------------------------------------
// Mirror of examples/stencil.py.
#define TY 32
#define TX 128
#define HX 4
#define SROWS (TY + 2)
#define SCOLS (TX + 2 * HX)
#define CPR (SCOLS / 4)

__global__ void __launch_bounds__(256)
stencil_async_k(const float* __restrict__ u, float* __restrict__ out, int H, int W, float a, float b) {
    __shared__ __align__(16) float sh[SROWS][SCOLS];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int x0 = blockIdx.x * TX, y0 = blockIdx.y * TY;
    // warp ty copies rows ty, ty + 8, ...: lane tx chunk tx, lanes 0 and 1
    // also chunks 32 and 33 (as the example)
    const int gxa = x0 - HX + 4 * tx, gxb = gxa + 128;
    const bool in_a = gxa >= 0 && gxa < W, has_b = tx < CPR - 32, in_b = has_b && gxb < W;
    const int sxa = in_a ? gxa : 0, sxb = in_b ? gxb : 0;
#pragma unroll
    for (int p = 0; p < (SROWS + 7) / 8; ++p) {
        int r = ty + 8 * p;
        if (r < SROWS) {
            int gy = y0 - 1 + r;
            bool row_in = gy >= 0 && gy < H;
            size_t row = row_in ? (size_t)gy * W : 0;
            __pipeline_memcpy_async(&sh[r][4 * tx], &u[row + sxa], 16, row_in && in_a ? 0 : 16);
            if (has_b)
                __pipeline_memcpy_async(&sh[r][4 * tx + 128], &u[row + sxb], 16, row_in && in_b ? 0 : 16);
        }
    }
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    const int gx = x0 + 4 * tx;
    if (gx >= W) return;
#pragma unroll
    for (int p = 0; p < TY / 8; ++p) {
        int row = ty + 8 * p, gy = y0 + row;
        if (gy >= H) continue;
        int sr = row + 1, sc = HX + 4 * tx;
        float4 c = *reinterpret_cast<const float4*>(&sh[sr][sc]);
        float4* dst = reinterpret_cast<float4*>(&out[(size_t)gy * W + gx]);
        if (gy == 0 || gy == H - 1) { *dst = c; continue; }
        float4 n = *reinterpret_cast<const float4*>(&sh[sr - 1][sc]);
        float4 s = *reinterpret_cast<const float4*>(&sh[sr + 1][sc]);
        float left = sh[sr][sc - 1], right = sh[sr][sc + 4];
        float4 o;
        o.x = a * c.x + b * (n.x + s.x + left + c.y);
        o.y = a * c.y + b * (n.y + s.y + c.x + c.z);
        o.z = a * c.z + b * (n.z + s.z + c.y + c.w);
        o.w = a * c.w + b * (n.w + s.w + c.z + right);
        if (gx == 0) o.x = c.x;
        if (gx + 3 == W - 1) o.w = c.w;
        *dst = o;
    }
}

__global__ void stencil_plain_k(const float* __restrict__ u, float* __restrict__ out, int H, int W, float a, float b) {
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= H || j >= W) return;
    size_t o = (size_t)i * W + j;
    if (i == 0 || j == 0 || i == H - 1 || j == W - 1) out[o] = u[o];
    else out[o] = a * u[o] + b * (u[o - W] + u[o + W] + u[o - 1] + u[o + 1]);
}

// The same without const __restrict__: plain LDG instead of the read-only
// path (LDG.CONSTANT), which a Numba kernel cannot request.
__global__ void stencil_plain_norestrict_k(const float* u, float* out, int H, int W, float a, float b) {
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= H || j >= W) return;
    size_t o = (size_t)i * W + j;
    if (i == 0 || j == 0 || i == H - 1 || j == W - 1) out[o] = u[o];
    else out[o] = a * u[o] + b * (u[o - W] + u[o + W] + u[o - 1] + u[o + 1]);
}

extern "C" int twin_stencil_async(const float* u, float* out, int H, int W, float a, float b) {
    dim3 grid((W + TX - 1) / TX, (H + TY - 1) / TY);
    stencil_async_k<<<grid, dim3(32, 8)>>>(u, out, H, W, a, b);
    return (int)cudaGetLastError();
}

extern "C" int twin_stencil_plain(const float* u, float* out, int H, int W, float a, float b) {
    dim3 grid((W + 31) / 32, (H + 7) / 8);
    stencil_plain_k<<<grid, dim3(32, 8)>>>(u, out, H, W, a, b);
    return (int)cudaGetLastError();
}

extern "C" int twin_stencil_plain_norestrict(const float* u, float* out, int H, int W, float a, float b) {
    dim3 grid((W + 31) / 32, (H + 7) / 8);
    stencil_plain_norestrict_k<<<grid, dim3(32, 8)>>>(u, out, H, W, a, b);
    return (int)cudaGetLastError();
}

// --- cluster neighbour exchange -----------------------------------------------
// Mirror of examples/exchange.py (exchange_dsmem): a 16 KB tile passes
// `rounds` times to the next rank of the cluster, one cluster bulk copy per
// round into the neighbour's buffer r % 2, completing on its barrier r % 2,
// and one cluster barrier per round.  PTX through inline asm, as the
// package emits it.
#define XTILE 4096
#define XBLOCK 256

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void cluster_sync_all() {
    asm volatile("barrier.cluster.arrive.release; barrier.cluster.wait.acquire;" ::: "memory");
}

__global__ void __launch_bounds__(XBLOCK)
exchange_dsmem_k(const float* __restrict__ A, float* __restrict__ out, int rounds) {
    __shared__ __align__(128) float buf[2][XTILE];
    __shared__ __align__(8) uint64_t bars[2];
    const int tid = threadIdx.x;
    const size_t base = (size_t)blockIdx.x * XTILE;
    uint32_t rank, nctas;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(nctas));
    const uint32_t nxt = (rank + 1) % nctas;
    if (tid == 0) {
        asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(smem_u32(&bars[0])) : "memory");
        asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(smem_u32(&bars[1])) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
#pragma unroll
    for (int v = 0; v < XTILE / XBLOCK / 4; ++v) {
        int e = 4 * (v * XBLOCK + tid);
        *reinterpret_cast<float4*>(&buf[1][e]) = *reinterpret_cast<const float4*>(&A[base + e]);
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    cluster_sync_all();
    for (int r = 0; r < rounds; ++r) {
        const int cur = r & 1;
        const uint32_t bar = smem_u32(&bars[cur]);
        if (tid == 0) {
            asm volatile("{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1; }"
                         ::"r"(bar), "r"(XTILE * 4) : "memory");
            uint32_t rbar, rdst;
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rbar) : "r"(bar), "r"(nxt));
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
                         : "=r"(rdst) : "r"(smem_u32(&buf[cur][0])), "r"(nxt));
            asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes"
                         " [%0], [%1], %2, [%3];"
                         ::"r"(rdst), "r"(smem_u32(&buf[cur ^ 1][0])), "n"(XTILE * 4), "r"(rbar)
                         : "memory");
        }
        uint32_t done = 0;
        while (!done)
            asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;"
                         " selp.u32 %0, 1, 0, p; }"
                         : "=r"(done) : "r"(bar), "r"((r >> 1) & 1) : "memory");
        cluster_sync_all();
    }
    const int last = (rounds + 1) & 1;
#pragma unroll
    for (int v = 0; v < XTILE / XBLOCK / 4; ++v) {
        int e = 4 * (v * XBLOCK + tid);
        *reinterpret_cast<float4*>(&out[base + e]) = *reinterpret_cast<const float4*>(&buf[last][e]);
    }
}

extern "C" int twin_exchange_dsmem(const float* A, float* out, int blocks, int rounds, int cluster) {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(XBLOCK);
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cluster;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    config.attrs = attr;
    config.numAttrs = 1;
    cudaError_t err = cudaLaunchKernelEx(&config, exchange_dsmem_k, A, out, rounds);
    return err != cudaSuccess ? (int)err : (int)cudaGetLastError();
}
