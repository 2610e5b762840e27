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
from .cluster import (
    cluster_arrive,
    cluster_cta_id,
    cluster_cta_rank,
    cluster_dim,
    cluster_id,
    cluster_num_ctas,
    cluster_sync,
    cluster_wait,
    dsmem_atomic_add,
    dsmem_load,
    dsmem_store,
    is_explicit_cluster,
    map_shared_rank,
    mbarrier_arrive_expect_tx_remote,
    mbarrier_arrive_remote,
    mbarrier_expect_tx_remote,
    num_clusters,
)
from .cluster_copy import cp_async_bulk_cluster
from .host import launch as _host_launch
from .host.launch import ClusterLaunchError, cluster_dims, launch, max_active_clusters
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
from .vector import chunk_view, load2, load4, load_vec, store2, store4, store_vec, view4


__all__ = [
    "ClusterLaunchError",
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
    "cluster_arrive",
    "cluster_cta_id",
    "cluster_cta_rank",
    "cluster_dim",
    "cluster_dims",
    "cluster_id",
    "cluster_num_ctas",
    "cluster_sync",
    "cluster_wait",
    "commit_group",
    "cp_async",
    "cp_async_bulk_cluster",
    "createpolicy_fractional",
    "dsmem_atomic_add",
    "dsmem_load",
    "dsmem_store",
    "feature_table",
    "inspect",
    "is_checked",
    "is_explicit_cluster",
    "launch",
    "map_shared_rank",
    "max_active_clusters",
    "mbarrier_arrive_expect_tx_remote",
    "mbarrier_arrive_remote",
    "mbarrier_expect_tx_remote",
    "num_clusters",
    "set_checked",
    "wait_all",
    "wait_group",
    "wait_timeout_ns",
    "chunk_view",
    "load2",
    "load4",
    "load_vec",
    "store2",
    "store4",
    "store_vec",
    "view4",
    "sim",
]

from . import sim

if sim.ENABLED:
    # NUMBA_ENABLE_CUDASIM=1: the same names become pure-Python versions
    # (validation reused from the modules above), so kernels run unchanged.
    globals().update(sim.implementations(globals()))
else:
    _patch_cache_key(_checked.cache_key)
    _host_launch.install()
