// CUDA C++ twin of numba_asynccopy/examples/hgemm.py: C = A @ B with bf16 or
// fp16 inputs, fp32 accumulation on Hopper tensor cores, 16-bit output.  The
// same algorithm and the same instructions through inline PTX (no CUTLASS,
// no cuda::ptx): a block of 384 threads computes 128 x 256 tiles of C in
// k-steps of 64.  Warpgroup 0 (setmaxnreg.dec 40) is the producer: one
// elected lane issues, per k-tile, one TMA load of the A box (128 x 64) and
// four of the B boxes (64 x 64), 128-byte swizzle, each armed on the slot's
// full barrier with its own arrive.expect_tx, into a ring of STAGES slots
// (the tma_pipeline's full/empty mbarriers; empty counts 2 arrivals).
// Warpgroups 1 and 2 (setmaxnreg.inc 232) each own 64 rows: wait for the
// slot, wgmma.fence, four m64n256k16 MMAs on shared-memory descriptors (B
// N-major, trans-b), commit, wait_group 1, and the warpgroup's first thread
// releases the previous k-tile's slot.  Epilogue: the fragment converted to
// 16 bits and stored as 4-byte pairs when the 64 x 256 block lies inside C
// (element by element, masked, otherwise), as ac.wgmma_store does.
// PERSISTENT: gridDim.x blocks walk the tiles in the grouped order of
// hgemm.py (GROUP_M m-tiles a group), the ring running on across tiles;
// hgemm_cluster: the 2-CTA cluster variant (B multicast), below.
// The tensor maps are the 128-byte maps in device memory that the Numba
// kernel gets (ac.TensorMap buffers), fenced the same way.
// A (M, K), B (K, N), C (M, N) row-major; N and K multiples of 8.

#include <cstdint>
#include <cuda_runtime.h>

namespace hgw {

constexpr int BM = 128, BK = 64, ATOM = 64, THREADS = 384, GROUP_M = 8;

__device__ __forceinline__ uint32_t smem(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    asm volatile(
        "{\n"
        " .reg .pred p;\n"
        " WAIT_%=:\n"
        " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        " @!p bra WAIT_%=;\n"
        "}\n" ::"r"(bar), "r"(parity) : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared.b64 _, [%0];" ::"r"(bar) : "memory");
}

__device__ __forceinline__ void tma_load(uint32_t dst, const void* map, int c0, int c1, uint32_t bar,
                                         uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
                 : "memory");
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar)
        : "memory");
}

__device__ __forceinline__ bool elect_one() {
    uint32_t ok;
    asm volatile("{\n .reg .pred p;\n elect.sync _|p, 0xffffffff;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(ok));
    return ok != 0;
}

// shared-memory matrix descriptor: address, leading and stride byte offsets, 128-byte swizzle
__device__ __forceinline__ uint64_t desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((addr >> 4) & 0x3FFF) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
           ((uint64_t)((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}

__device__ __forceinline__ void mma_m64n256k16_bf16(float (&d)[128], uint64_t da, uint64_t db, int scale_d) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
        "{"
        "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
        "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
        "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
        "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"
        "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,"
        "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,"
        "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,"
        "%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127"
        "}, %128, %129, p, 1, 1, 0, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void mma_m64n256k16_f16(float (&d)[128], uint64_t da, uint64_t db, int scale_d) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
        "{"
        "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
        "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
        "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"
        "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"
        "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,"
        "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,"
        "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,"
        "%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127"
        "}, %128, %129, p, 1, 1, 0, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(scale_d));
}

template <bool BF16>
__device__ __forceinline__ void mma(float (&d)[128], uint64_t da, uint64_t db, int scale_d) {
    if constexpr (BF16) mma_m64n256k16_bf16(d, da, db, scale_d);
    else mma_m64n256k16_f16(d, da, db, scale_d);
}

template <bool BF16>
__device__ __forceinline__ uint32_t pack(float lo, float hi) {
    uint32_t r;
    if constexpr (BF16) asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

template <bool BF16>
__device__ __forceinline__ uint16_t one(float v) {
    uint16_t r;
    if constexpr (BF16) asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(v));
    else asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(v));
    return r;
}

// the warpgroup's m64n256 fragment to C[r0:r0+64, c0:c0+256], as ac.wgmma_store
template <bool BF16>
__device__ __forceinline__ void store(const float (&d)[128], uint16_t* C, int M, int N, int r0, int c0) {
    const int t = threadIdx.x % 128, lane = t % 32, warp = t / 32;
    const int row = r0 + 16 * warp + lane / 4, col = c0 + 2 * (lane % 4);
    if (r0 + 64 <= M && c0 + 256 <= N) {
        uint16_t* p0 = C + (long long)row * N + col;
        uint16_t* p1 = p0 + 8LL * N;
#pragma unroll
        for (int i = 0; i < 32; ++i) {
            *reinterpret_cast<uint32_t*>(p0 + 8 * i) = pack<BF16>(d[4 * i], d[4 * i + 1]);
            *reinterpret_cast<uint32_t*>(p1 + 8 * i) = pack<BF16>(d[4 * i + 2], d[4 * i + 3]);
        }
    } else {
#pragma unroll
        for (int j = 0; j < 128; ++j) {
            const int r = row + 8 * ((j / 2) % 2), c = col + 8 * (j / 4) + j % 2;
            if (r < M && c < N) C[(long long)r * N + c] = one<BF16>(d[j]);
        }
    }
}

template <bool PERSISTENT>
__device__ __forceinline__ bool tile_of(int& tile, int step, int ntm, int ntn, int& m0, int& n0) {
    // the tile this block does at `step` (false: none left)
    if (PERSISTENT) {
        tile = blockIdx.x + step * gridDim.x;
        if (tile >= ntm * ntn) return false;
        const int per_group = GROUP_M * ntn;
        const int first = (tile / per_group) * GROUP_M;
        const int rows = min(ntm - first, GROUP_M);
        m0 = (first + tile % rows) * BM;
        n0 = ((tile % per_group) / rows) * 256;
        return true;
    }
    if (step > 0) return false;
    m0 = blockIdx.y * BM;
    n0 = blockIdx.x * 256;
    return true;
}

template <bool BF16, int STAGES, bool PERSISTENT>
__global__ void __launch_bounds__(THREADS, 1) hgemm(const void* ta, const void* tb, uint16_t* C, int M,
                                                    int N, int K) {
    constexpr int NB = 256 / ATOM;
    constexpr uint32_t A_BYTES = BM * BK * 2, B_BYTES = BK * ATOM * 2;
    extern __shared__ uint8_t dyn_raw[];
    __shared__ uint64_t bars[2 * STAGES];
    // the ring at a 1024-byte boundary (128-byte swizzle atoms); launched with 1 KB to spare
    const uint32_t raw = smem(dyn_raw);
    const uint32_t sa = (raw + 1023) & ~1023u;
    const uint32_t sb = sa + STAGES * A_BYTES;
    const uint32_t full = smem(bars), empty = full + 8 * STAGES;
    const int tid = threadIdx.x, wg = tid / 128;
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full + 8 * s, 1 + NB);
            mbar_init(empty + 8 * s, 2);
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    const int ktiles = (K + BK - 1) / BK;
    const int ntm = (M + BM - 1) / BM, ntn = (N + 255) / 256;
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;" ::: "memory");
        if (tid < 32 && elect_one()) {
            asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;" ::"l"(ta) : "memory");
            asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;" ::"l"(tb) : "memory");
            uint32_t slot = 0, phase = 1;
            int tile, m0, n0;
            for (int step = 0; tile_of<PERSISTENT>(tile, step, ntm, ntn, m0, n0); ++step) {
                for (int t = 0; t < ktiles; ++t) {
                    mbar_wait(empty + 8 * slot, phase);
                    const uint32_t bar = full + 8 * slot;
                    tma_load(sa + slot * A_BYTES, ta, t * BK, m0, bar, A_BYTES);
#pragma unroll
                    for (int j = 0; j < NB; ++j)
                        tma_load(sb + (slot * NB + j) * B_BYTES, tb, n0 + ATOM * j, t * BK, bar, B_BYTES);
                    if (slot == STAGES - 1) { slot = 0; phase ^= 1; } else { ++slot; }
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;" ::: "memory");
        const int c = wg - 1;
        const bool leader = (tid % 128) == 0;
        float acc[128];
#pragma unroll
        for (int i = 0; i < 128; ++i) acc[i] = 0.f;
        uint32_t slot = 0, phase = 0;
        int tile, m0, n0;
        for (int step = 0; tile_of<PERSISTENT>(tile, step, ntm, ntn, m0, n0); ++step) {
            uint32_t prev = slot;
            for (int t = 0; t < ktiles; ++t) {
                mbar_wait(full + 8 * slot, phase);
                asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {
                    // A: rows 64c.. of the slot's 128 x 64 box, K slice kk (rows 128 B apart)
                    const uint64_t da = desc(sa + slot * A_BYTES + c * 64 * 128 + kk * 32, 16, 1024);
                    // B: the four 64-column atoms (8 KB apart), K rows 16kk..
                    const uint64_t db = desc(sb + slot * NB * B_BYTES + kk * 16 * 128, B_BYTES, 1024);
                    mma<BF16>(acc, da, db, (t > 0) || (kk > 0));
                }
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                if (t > 0 && leader) mbar_arrive(empty + 8 * prev);
                prev = slot;
                if (slot == STAGES - 1) { slot = 0; phase ^= 1; } else { ++slot; }
            }
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            if (leader) mbar_arrive(empty + 8 * prev);
            store<BF16>(acc, C, M, N, m0 + 64 * c, n0);
        }
    }
}

__device__ __forceinline__ void tma_load_multicast(uint32_t dst, const void* map, int c0, int c1,
                                                   uint32_t bar, uint32_t bytes, uint16_t mask) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
                 : "memory");
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst), "l"(map), "r"(c0),
        "r"(c1), "r"(bar), "h"(mask)
        : "memory");
}

// an arrival on the barrier at the same offset in CTA `rank` of the cluster; CTA-scope
// release (the pipeline's consumer_release: the slot's reads are done, nothing to publish)
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t rank) {
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(rank));
    asm volatile("mbarrier.arrive.release.cta.shared::cluster.b64 _, [%0];" ::"r"(remote)
                 : "memory");
}

__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release; barrier.cluster.wait.acquire;" ::: "memory");
}

// The 2-CTA cluster variant (hgemm.py's cluster=2, persistent): the CTAs of a
// pair compute vertically adjacent tiles; A has its own ring (tma_pipeline),
// B a cluster ring (cluster_tma_pipeline: each CTA loads two of the four
// B boxes, multicast to both; a slot is free once the consumers of both CTAs
// released it, so the empty barrier counts 4 arrivals, made in both CTAs).
template <bool BF16, int STAGES>
__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(THREADS, 1)
    hgemm_cluster(const void* ta, const void* tb, uint16_t* C, int M, int N, int K) {
    constexpr int NB = 256 / ATOM, HALF = NB / 2;
    constexpr uint32_t A_BYTES = BM * BK * 2, B_BYTES = BK * ATOM * 2;
    extern __shared__ uint8_t dyn_raw[];
    __shared__ uint64_t bars_a[2 * STAGES], bars_b[2 * STAGES];
    const uint32_t raw = smem(dyn_raw);
    const uint32_t sa = (raw + 1023) & ~1023u;
    const uint32_t sb = sa + STAGES * A_BYTES;
    const uint32_t full_a = smem(bars_a), empty_a = full_a + 8 * STAGES;
    const uint32_t full_b = smem(bars_b), empty_b = full_b + 8 * STAGES;
    const int tid = threadIdx.x, wg = tid / 128;
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full_a + 8 * s, 1);
            mbar_init(empty_a + 8 * s, 2);
        }
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full_b + 8 * s, HALF);
            mbar_init(empty_b + 8 * s, 2 * 2);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    cluster_sync();
    uint32_t rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const int ktiles = (K + BK - 1) / BK;
    const int pairs_m = (M + 2 * BM - 1) / (2 * BM), ntn = (N + 255) / 256;
    const int npairs = pairs_m * ntn, group = GROUP_M / 2, per_group = group * ntn;
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;" ::: "memory");
        if (tid < 32 && elect_one()) {
            asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;" ::"l"(ta) : "memory");
            asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;" ::"l"(tb) : "memory");
            uint32_t slot = 0, phase = 1;
            for (int pair = blockIdx.x / 2; pair < npairs; pair += gridDim.x / 2) {
                const int first = (pair / per_group) * group;
                const int rows = min(pairs_m - first, group);
                const int m0 = (2 * (first + pair % rows) + rank) * BM;
                const int n0 = ((pair % per_group) / rows) * 256;
                for (int t = 0; t < ktiles; ++t) {
                    mbar_wait(empty_a + 8 * slot, phase);
                    tma_load(sa + slot * A_BYTES, ta, t * BK, m0, full_a + 8 * slot, A_BYTES);
                    mbar_wait(empty_b + 8 * slot, phase);
#pragma unroll
                    for (int j = 0; j < HALF; ++j) {
                        const int q = rank * HALF + j;
                        tma_load_multicast(sb + (slot * NB + q) * B_BYTES, tb, n0 + ATOM * q, t * BK,
                                           full_b + 8 * slot, 2 * B_BYTES, 0x3);
                    }
                    if (slot == STAGES - 1) { slot = 0; phase ^= 1; } else { ++slot; }
                }
            }
            // producer_tail: every slot of the B ring released by both CTAs
            for (int i = 0; i < STAGES; ++i) {
                mbar_wait(empty_b + 8 * slot, phase);
                if (slot == STAGES - 1) { slot = 0; phase ^= 1; } else { ++slot; }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;" ::: "memory");
        const int c = wg - 1;
        const bool leader = (tid % 128) == 0;
        float acc[128];
#pragma unroll
        for (int i = 0; i < 128; ++i) acc[i] = 0.f;
        uint32_t slot = 0, phase = 0;
        for (int pair = blockIdx.x / 2; pair < npairs; pair += gridDim.x / 2) {
            const int first = (pair / per_group) * group;
            const int rows = min(pairs_m - first, group);
            const int m0 = (2 * (first + pair % rows) + rank) * BM;
            const int n0 = ((pair % per_group) / rows) * 256;
            uint32_t prev = slot;
            for (int t = 0; t < ktiles; ++t) {
                mbar_wait(full_a + 8 * slot, phase);
                mbar_wait(full_b + 8 * slot, phase);
                asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {
                    const uint64_t da = desc(sa + slot * A_BYTES + c * 64 * 128 + kk * 32, 16, 1024);
                    const uint64_t db = desc(sb + slot * NB * B_BYTES + kk * 16 * 128, B_BYTES, 1024);
                    mma<BF16>(acc, da, db, (t > 0) || (kk > 0));
                }
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                if (t > 0 && leader) {
                    mbar_arrive(empty_a + 8 * prev);
                    mbar_arrive_cluster(empty_b + 8 * prev, 0);
                    mbar_arrive_cluster(empty_b + 8 * prev, 1);
                }
                prev = slot;
                if (slot == STAGES - 1) { slot = 0; phase ^= 1; } else { ++slot; }
            }
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            if (leader) {
                mbar_arrive(empty_a + 8 * prev);
                mbar_arrive_cluster(empty_b + 8 * prev, 0);
                mbar_arrive_cluster(empty_b + 8 * prev, 1);
            }
            store<BF16>(acc, C, M, N, m0 + 64 * c, n0);
        }
    }
    cluster_sync();  // no CTA exits while its peer may still multicast or arrive into it
}

template <bool BF16>
int launch_cluster(const void* ta, const void* tb, void* C, int M, int N, int K, int grid) {
    constexpr int STAGES = 4;
    const int smem_bytes = STAGES * (BM * BK + 4 * BK * ATOM) * 2 + 1024;
    auto k = hgemm_cluster<BF16, STAGES>;
    static bool raised = false;
    if (!raised) {
        cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
        if (e != cudaSuccess) return static_cast<int>(e);
        raised = true;
    }
    if (grid < 2 || grid % 2) return -1;
    k<<<grid, THREADS, smem_bytes>>>(ta, tb, static_cast<uint16_t*>(C), M, N, K);
    return static_cast<int>(cudaGetLastError());
}

template <bool BF16, bool PERSISTENT>
int launch(const void* ta, const void* tb, void* C, int M, int N, int K, int grid) {
    constexpr int STAGES = 4;
    const int smem_bytes = STAGES * (BM * BK + 4 * BK * ATOM) * 2 + 1024;
    auto k = hgemm<BF16, STAGES, PERSISTENT>;
    static bool raised = false;  // one per instantiation
    if (!raised) {
        cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
        if (e != cudaSuccess) return static_cast<int>(e);
        raised = true;
    }
    dim3 g = PERSISTENT ? dim3(grid) : dim3((N + 255) / 256, (M + BM - 1) / BM);
    k<<<g, THREADS, smem_bytes>>>(ta, tb, static_cast<uint16_t*>(C), M, N, K);
    return static_cast<int>(cudaGetLastError());
}

}  // namespace hgw

// bn = 256, 4 stages, 16-bit output; bf16 = 1: bf16 inputs and output (uint16 bits), 0: fp16;
// persistent = 1: `grid` blocks walk the tiles, 2: `grid` blocks (even) in 2-CTA clusters
// multicasting B; returns a cudaError_t (-1: not instantiated)
extern "C" int twin_hgemm(const void* ta, const void* tb, void* C, int M, int N, int K, int bn,
                          int stages, int bf16, int persistent, int grid) {
    if (bn != 256 || stages != 4) return -1;
    if (persistent == 2)
        return bf16 ? hgw::launch_cluster<true>(ta, tb, C, M, N, K, grid)
                    : hgw::launch_cluster<false>(ta, tb, C, M, N, K, grid);
    if (persistent)
        return bf16 ? hgw::launch<true, true>(ta, tb, C, M, N, K, grid)
                    : hgw::launch<false, true>(ta, tb, C, M, N, K, grid);
    return bf16 ? hgw::launch<true, false>(ta, tb, C, M, N, K, grid)
                : hgw::launch<false, false>(ta, tb, C, M, N, K, grid);
}
