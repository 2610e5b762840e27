"""Example kernels: the examples of TVM TIRx's async-copy documentation and the
reference kernels the benchmarks measure.

Each example is a plain Python function (or a factory returning one) plus
the Numba signature it is compiled for, so it can be compiled without a GPU
(``cuda.compile_ptx``) and launched with one (``cuda.jit(SIGNATURE)(fn)``).

- ``seeds``: the cp.async examples of the seed documents.
- ``staged_copy``: global -> shared (cp.async, N stages) -> global.
- ``sgemm``: float32 SIMT SGEMM, synchronous shared loads or a cp.async ring on
  ``ac.pipeline``; ``sgemm_manual``: the same with the ring written by hand.
- ``stencil``: 2-D 5-point stencil with cp.async halo tiles, and a plain version.
- ``exchange``: a cluster neighbour exchange through distributed shared memory
  (cluster bulk copy) and the same exchange through global memory.
- ``bulk_copy``: global -> shared -> global with 1-D cp.async.bulk on mbarriers (sm_90).
- ``tma_copy``: 2-D tile copy with TMA tensor maps, multi-stage (sm_90).
- ``*_manual`` (``staged_copy_manual``, ``bulk_copy_manual``, ``tma_copy_manual``,
  ``sgemm_manual``): the same kernels with the ring written by hand (the
  benchmark compares them with the ``ac.pipeline`` versions).
- ``ws_reduce``: ``Y = W @ X`` with a warp-specialized producer (``elect_sync``)
  feeding consumer warps through a cluster pipeline of multicast TMA loads (sm_90).

The benchmark (``python -m numba_asynccopy.bench``) measures them against
torch, cuBLAS and CUDA C++ twins (``numba_asynccopy/bench/twins.cu``).
"""
