"""The benchmark suite: ``python -m numba_asynccopy.bench``.

Measures the example kernels against peers measured in the same run (torch's
device copy, cuBLAS through ``torch.matmul`` with TF32 off, the plain Numba
kernels, and CUDA C++ twins built with nvcc on the device), prints one table
and writes ``results.json`` and ``results.png`` to ``--out``
(default ``bench-results/``).  ``--quick`` is a smoke test with small sizes.
"""
