"""numba-asynccopy: asynchronous data movement for Numba CUDA kernels.

``import numba_asynccopy as ac`` registers every intrinsic; call them inside
``@cuda.jit`` kernels.
"""

import importlib as _importlib

from ._version import __version__

from . import checked as _checked
from ._compat import ContractError
from ._compat import patch_cache_key as _patch_cache_key
from ._forms import FORMS, feature_table
from ._forms import family_of as _family_of
from ._forms import public_apis as _public_apis
from .checked import checked_mode, is_checked, set_checked, wait_timeout_ns
from .host import launch as _host_launch
from .host.bf16 import bf16_array, bf16_values
from .host.interop import InteropError, as_device_array, as_stream
from .host.launch import ClusterLaunchError, LaunchTypeError, launch, max_active_clusters
from .host.im2col import conv_corners
from .host.tensor_map import TensorMap, TensorMapTypeError
from .report import inspect
from .facts import cache_key as _facts_cache_key
from .facts import install as _install_facts
from .pragma import install as _install_pragmas
from .pragma import pragma_nounroll
from .vector import chunk_view, load2, load4, load_vec, store2, store4, store_vec, view4
from .mma import bf16_to_f32, mma_zeros
from .wgmma import wgmma_descriptor, wgmma_load_a, wgmma_store, wgmma_zero

# Every public device function is bound from the family module its registry
# row names: a new form is a row and a function, with no import to add here.
for _api in _public_apis():
    globals()[_api] = getattr(_importlib.import_module(f".{_family_of(_api)}", __name__), _api)
del _api

# The device functions are the registry's public names (``_forms``); the rest
# is host side.  tests/cpu/test_api_pinned.py pins the whole list.
_HOST_API = [
    "ClusterLaunchError",
    "ContractError",
    "FORMS",
    "InteropError",
    "LaunchTypeError",
    "TensorMap",
    "TensorMapTypeError",
    "as_device_array",
    "as_stream",
    "bf16_array",
    "bf16_values",
    "checked_mode",
    "conv_corners",
    "feature_table",
    "inspect",
    "is_checked",
    "launch",
    "max_active_clusters",
    "set_checked",
    "sim",
    "wait_timeout_ns",
]
# device helpers that emit no PTX form of their own (NVVM's vector accesses)
_VECTOR_API = ["chunk_view", "load2", "load4", "load_vec", "store2", "store4", "store_vec", "view4"]
# a loop pragma (LLVM loop metadata, which NVVM turns into PTX's .pragma "nounroll")
_PRAGMA_API = ["pragma_nounroll"]
# tensor-core helpers that emit no PTX form of their own (a zero fragment, a bf16 read)
_MMA_API = ["bf16_to_f32", "mma_zeros"]
# warpgroup MMA helpers that emit no PTX form of their own (descriptor arithmetic, fragments)
_WGMMA_API = ["wgmma_descriptor", "wgmma_load_a", "wgmma_store", "wgmma_zero"]
__all__ = [*_public_apis(), *_VECTOR_API, *_PRAGMA_API, *_MMA_API, *_WGMMA_API, *_HOST_API]

from . import pipeline, sim

if sim.ENABLED:
    # NUMBA_ENABLE_CUDASIM=1: the same names become the simulator's twins
    # (validation reused from the modules above), so kernels run unchanged.
    sim.bind(globals())
else:
    _patch_cache_key(lambda: _checked.cache_key() + _facts_cache_key())
    _install_facts()  # before the pragmas: a pragma_nounroll loop's metadata is its own
    _install_pragmas()
    _host_launch.install()
