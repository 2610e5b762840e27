from numba_asynccopy import load4, store4, view4  # noqa: F401  (old home, kept for importers)
