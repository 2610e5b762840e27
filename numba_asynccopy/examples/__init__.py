"""Example kernels: the seeds' examples and the reference kernels.

Each example is a plain Python function plus the Numba signature it is
compiled for, so it can be compiled without a GPU (``compile_ptx``) and
launched with one (``cuda.jit``).
"""
