// Which tiles a block of the copy twins takes: base + i * stride for
// i < count.  run 0: a persistent grid with a grid stride; run N: block b
// copies tiles b*N .. b*N+N-1 (fewer for the last block, none past the end).
// Mirror of numba_asynccopy/examples/_tiles.py.
#pragma once

__device__ __forceinline__ void block_tiles(long long ntiles, int run, long long& base,
                                            long long& stride, long long& count) {
    const long long first = blockIdx.x;
    if (run) {
        base = first * run;
        stride = 1;
        count = base < ntiles ? (run < ntiles - base ? run : ntiles - base) : 0;
    } else {
        const long long step = gridDim.x;
        base = first;
        stride = step;
        count = base < ntiles ? (ntiles - base + step - 1) / step : 0;
    }
}
