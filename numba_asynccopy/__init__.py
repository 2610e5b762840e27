"""numba-asynccopy: asynchronous data movement for Numba CUDA kernels.

``import numba_asynccopy as ac`` registers every intrinsic; call them inside
``@cuda.jit`` kernels.
"""

__version__ = "0.1.0"

from . import checked as _checked
from ._compat import patch_cache_key as _patch_cache_key
from ._forms import FORMS, feature_table
from .checked import checked_mode, is_checked, set_checked, wait_timeout_ns
from .cp_async import commit_group, cp_async, createpolicy_fractional, wait_all, wait_group
from .bulk import (
    bulk_commit_group,
    bulk_wait_group,
    cp_async_bulk_g2s,
    cp_async_bulk_prefetch_l2,
    cp_async_bulk_s2g,
    cp_reduce_async_bulk_s2g,
)
from .host.tensor_map import TensorMap
from .tensor import (
    cp_async_bulk_tensor_load,
    cp_async_bulk_tensor_store,
    cp_reduce_async_bulk_tensor,
    fence_proxy_tensormap,
    prefetch_tensormap,
)

_patch_cache_key(_checked.cache_key)

__all__ = [
    "bulk_commit_group",
    "bulk_wait_group",
    "cp_async_bulk_g2s",
    "cp_async_bulk_prefetch_l2",
    "cp_async_bulk_s2g",
    "cp_reduce_async_bulk_s2g",
    "TensorMap",
    "cp_async_bulk_tensor_load",
    "cp_async_bulk_tensor_store",
    "cp_reduce_async_bulk_tensor",
    "fence_proxy_tensormap",
    "prefetch_tensormap",
    "FORMS",
    "checked_mode",
    "commit_group",
    "cp_async",
    "createpolicy_fractional",
    "feature_table",
    "is_checked",
    "set_checked",
    "wait_all",
    "wait_group",
    "wait_timeout_ns",
]
