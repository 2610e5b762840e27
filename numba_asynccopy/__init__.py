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
from .inspect import inspect
from .fence import elect_sync, fence_acq_rel_cluster, fence_mbarrier_init, fence_proxy_async
from .mbarrier import (
    cp_async_mbarrier_arrive,
    mbarrier_arrive,
    mbarrier_arrive_drop,
    mbarrier_arrive_drop_no_complete,
    mbarrier_arrive_expect_tx,
    mbarrier_arrive_no_complete,
    mbarrier_complete_tx,
    mbarrier_expect_tx,
    mbarrier_init,
    mbarrier_inval,
    mbarrier_pending_count,
    mbarrier_test_wait,
    mbarrier_test_wait_parity,
    mbarrier_try_wait,
    mbarrier_try_wait_parity,
    mbarrier_wait,
    mbarrier_wait_parity,
)

_patch_cache_key(_checked.cache_key)

__all__ = [
    "FORMS",
    "cp_async_mbarrier_arrive",
    "elect_sync",
    "fence_acq_rel_cluster",
    "fence_mbarrier_init",
    "fence_proxy_async",
    "mbarrier_arrive",
    "mbarrier_arrive_drop",
    "mbarrier_arrive_drop_no_complete",
    "mbarrier_arrive_expect_tx",
    "mbarrier_arrive_no_complete",
    "mbarrier_complete_tx",
    "mbarrier_expect_tx",
    "mbarrier_init",
    "mbarrier_inval",
    "mbarrier_pending_count",
    "mbarrier_test_wait",
    "mbarrier_test_wait_parity",
    "mbarrier_try_wait",
    "mbarrier_try_wait_parity",
    "mbarrier_wait",
    "mbarrier_wait_parity",
    "checked_mode",
    "commit_group",
    "cp_async",
    "createpolicy_fractional",
    "feature_table",
    "inspect",
    "is_checked",
    "set_checked",
    "wait_all",
    "wait_group",
    "wait_timeout_ns",
]
