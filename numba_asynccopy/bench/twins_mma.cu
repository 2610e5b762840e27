// CUDA C++ twin of numba_asynccopy/examples/hgemm_sm80.py: C = A @ B with
// bf16 or fp16 inputs and fp32 accumulation, the Ampere way.  The same
// algorithm and the same instructions through inline PTX (no CUTLASS, no
// wmma): a block of 128 threads (4 warps, 2 x 2) computes a 128 x 128 tile
// of C in k-steps of 16; each warp holds 4 x 8 m16n8 fp32 fragments;
// cp.async 16-byte chunks (zero-filled past M, N, K) into STAGES padded
// shared buffers with commit/wait groups (wait_group(STAGES - 2) and one
// block barrier per k-tile, as ac.pipeline.group_pipeline(STAGES, True));
// ldmatrix.x4 for A, ldmatrix.x2.trans for B, mma.sync.m16n8k16; a masked
// fp32 store.  A (M, K), B (K, N), C (M, N) row-major; N and K multiples of 8.

#include <cstdint>
#include <cuda_runtime.h>

namespace hg {

constexpr int BM = 128, BN = 128, BK = 16, THREADS = 128;
constexpr int WM = 64, WN = 64, MT = WM / 16, NT = WN / 8;
constexpr int PA = BK + 8, PB = BN + 8;  // padded rows (halves): conflict-free ldmatrix

__device__ __forceinline__ uint32_t smem(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp16(void* dst, const void* src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(smem(dst)), "l"(src), "r"(bytes) : "memory");
}

template <bool BF16>
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    if constexpr (BF16) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    } else {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
}

template <int STAGES>
__device__ __forceinline__ void load_tile(const uint16_t* __restrict__ A, const uint16_t* __restrict__ B,
                                          uint16_t (*sa)[BM][PA], uint16_t (*sb)[BK][PB], int slot,
                                          int kt, int tid, int m0, int n0, int M, int N, int K) {
    const int k0 = kt * BK;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int q = tid + THREADS * i;
        int ra = q / 2, ca = (q % 2) * 8;
        int gr = m0 + ra, gc = k0 + ca;
        bool ok = gr < M && gc < K;
        cp16(&sa[slot][ra][ca], A + (ok ? (long long)gr * K + gc : 0), ok ? 16 : 0);
        int rb = q / 16, cb = (q % 16) * 8;
        gr = k0 + rb;
        gc = n0 + cb;
        ok = gr < K && gc < N;
        cp16(&sb[slot][rb][cb], B + (ok ? (long long)gr * N + gc : 0), ok ? 16 : 0);
    }
}

template <bool BF16, int STAGES>
__global__ void __launch_bounds__(THREADS) hgemm(const uint16_t* __restrict__ A,
                                                 const uint16_t* __restrict__ B,
                                                 float* __restrict__ C, int M, int N, int K) {
    __shared__ __align__(128) uint16_t sa[STAGES][BM][PA];
    __shared__ __align__(128) uint16_t sb[STAGES][BK][PB];
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = (warp / 2) * WM, wn = (warp % 2) * WN;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int ktiles = (K + BK - 1) / BK;
    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) load_tile<STAGES>(A, B, sa, sb, s, s, tid, m0, n0, M, N, K);
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    }
    for (int kt = 0; kt < ktiles; ++kt) {
        asm volatile("cp.async.wait_group %0;\n" :: "n"(STAGES - 2) : "memory");
        __syncthreads();
        const int next = kt + STAGES - 1;
        if (next < ktiles) load_tile<STAGES>(A, B, sa, sb, next % STAGES, next, tid, m0, n0, M, N, K);
        asm volatile("cp.async.commit_group;\n" ::: "memory");
        const int slot = kt % STAGES;
        uint32_t af[MT][4], bf[NT][2];
#pragma unroll
        for (int i = 0; i < MT; ++i) {
            const uint16_t* p = &sa[slot][wm + 16 * i + lane % 16][(lane / 16) * 8];
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                         : "=r"(af[i][0]), "=r"(af[i][1]), "=r"(af[i][2]), "=r"(af[i][3])
                         : "r"(smem(p)));
        }
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            const uint16_t* p = &sb[slot][lane % 16][wn + 8 * j];
            asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                         : "=r"(bf[j][0]), "=r"(bf[j][1]) : "r"(smem(p)));
        }
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int j = 0; j < NT; ++j) mma<BF16>(acc[i][j], af[i], bf[j]);
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int r = m0 + wm + 16 * i + lane / 4 + 8 * (e / 2);
                const int c = n0 + wn + 8 * j + 2 * (lane % 4) + e % 2;
                if (r < M && c < N) C[(long long)r * N + c] = acc[i][j][e];
            }
}

template <bool BF16>
int launch(const void* A, const void* B, float* C, int M, int N, int K, int stages) {
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    auto a = static_cast<const uint16_t*>(A);
    auto b = static_cast<const uint16_t*>(B);
    switch (stages) {
        case 2: hgemm<BF16, 2><<<grid, THREADS>>>(a, b, C, M, N, K); break;
        case 3: hgemm<BF16, 3><<<grid, THREADS>>>(a, b, C, M, N, K); break;
        case 4: hgemm<BF16, 4><<<grid, THREADS>>>(a, b, C, M, N, K); break;
        default: return -1;
    }
    return static_cast<int>(cudaGetLastError());
}

}  // namespace hg

// bf16 = 1: bf16 inputs (uint16 bits), 0: fp16; returns a cudaError_t (-1: no such stages)
extern "C" int twin_hgemm_sm80(const void* A, const void* B, float* C, int M, int N, int K,
                               int stages, int bf16) {
    return bf16 ? hg::launch<true>(A, B, C, M, N, K, stages) : hg::launch<false>(A, B, C, M, N, K, stages);
}
