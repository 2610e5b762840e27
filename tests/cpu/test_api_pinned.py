"""The public API is pinned: every name in ``ac.__all__`` and the signature
users call it with.  Users' code is written against these; add names, never
rename or drop one (keep an old name as a documented alias)."""

from __future__ import annotations

import inspect

from numba.cuda.extending import _Intrinsic

import numba_asynccopy as ac

PINNED = {
    'wgmma_fence': '(acc=None)',
    'wgmma_commit_group': '()',
    'wgmma_wait_group': '(n, acc=None)',
    'wgmma_mma_async': '(acc, a, b, *, dtype=None, scale_d=True, scale_a=1, scale_b=1, trans_a=False, trans_b=False)',
    'wgmma_descriptor': "(tile, swizzle=None, major='K')",
    'wgmma_zero': "(n, dtype='f32')",
    'wgmma_store': '(acc, out, row0, col0, *, dtype=None, scale=None)',
    'wgmma_load_a': '(a, row0, col0)',
    'setmaxnreg_inc': '(r)',
    'setmaxnreg_dec': '(r)',
    'chunk_view': '(arr, idx, n)',
    'load2': '(arr, idx)',
    'load4': '(arr, idx)',
    'load_vec': '(arr, idx, n)',
    'store2': '(arr, idx, values)',
    'store4': '(arr, idx, values)',
    'store_vec': '(arr, idx, values)',
    'view4': '(arr, idx)',
    'pragma_nounroll': '()',
    'bf16_array': "(x: 'Any') -> 'np.ndarray'",
    'bf16_values': "(h: 'Any') -> 'np.ndarray'",
    'bf16_to_f32': '(h)',
    'f32_to_bf16': '(x)',
    'ldmatrix': '(tile, idx, num=4, trans=False)',
    'mma_load_a': '(tile, row, col)',
    'mma_load_b': "(tile, row, col, layout='row')",
    'mma_store': '(out, row, col, acc)',
    'mma_sync': '(a, b, c, dtype, shape=None)',
    'mma_zeros': '()',
    'stmatrix': '(tile, idx, values, trans=False)',
    'ClusterLaunchError': 'class',
    'ContractError': 'class',
    'LaunchTypeError': 'class',
    'TensorMapTypeError': 'class',
    'FORMS': 'dict',
    'TensorMap': 'class',
    'InteropError': 'class',
    'as_stream': "(obj: 'Any', what: 'str' = 'ac.launch') -> 'Any'",
    'as_device_array': "(obj: 'Any', what: 'str' = 'ac.as_device_array', name: 'str' = 'the array') -> 'Any'",
    'bulk_commit_group': '()',
    'bulk_wait_group': '(n, read=False)',
    'checked_mode': "(enabled: 'bool' = True, *, timeout_ns: 'int | None' = None) -> 'Iterator[None]'",
    'cluster_arrive': "(sem='release', *, aligned=False)",
    'cluster_cta_id': '()',
    'cluster_cta_rank': '()',
    'cluster_dim': '()',
    'cluster_dims': '(x, y=1, z=1, *, non_portable=False)',
    'cluster_id': '()',
    'cluster_num_ctas': '()',
    'cluster_sync': '(*, aligned=False)',
    'cluster_wait': '(*, aligned=False)',
    'commit_group': '()',
    'cp_async': "(dst, src, chunk_bytes, *, cache=None, prefetch=None, src_size=None, ignore_src=False, pred=True, cache_policy=None, scope='thread')",
    'cp_async_bulk_cluster': '(dst, src, chunk_bytes, mbar, remote_cta_id, pred=True)',
    'cp_async_bulk_g2s': '(dst, src, mbar, *, multicast_mask=None, cache_policy=None)',
    'cp_async_bulk_prefetch_l2': '(src, *, cache_policy=None)',
    'cp_async_bulk_s2g': '(dst, src, *, cache_policy=None)',
    'cp_async_bulk_tensor_load': '(dst, tensor_map, coords, mbar, *, multicast_mask=None, cache_policy=None, fence=True)',
    'cp_async_bulk_tensor_load_im2col': '(dst, tensor_map, coords, offsets, mbar, *, multicast_mask=None, cache_policy=None, fence=True)',
    'cp_async_bulk_prefetch_tensor_im2col': '(tensor_map, coords, offsets, *, cache_policy=None, fence=True)',
    'cp_async_bulk_tensor_store': '(tensor_map, coords, src, *, cache_policy=None, fence=True)',
    'cp_async_mbarrier_arrive': '(bar, noinc=False)',
    'cp_reduce_async_bulk_s2g': '(dst, src, op, *, bf16=False, cache_policy=None)',
    'cp_reduce_async_bulk_tensor': '(tensor_map, coords, src, op, *, bf16=False, cache_policy=None, fence=True)',
    'cp_async_bulk_tensor_store_im2col': '(tensor_map, coords, src, *, cache_policy=None, fence=True)',
    'cp_reduce_async_bulk_tensor_im2col': '(tensor_map, coords, src, op, *, bf16=False, cache_policy=None, fence=True)',
    'createpolicy_fractional': "(primary='evict_last', secondary=None, fraction=1.0)",
    'dsmem_atomic_add': '(view, rank, index, value)',
    'dsmem_load': '(view, rank, index)',
    'dsmem_store': '(view, rank, index, value)',
    'elect_sync': '(mask=4294967295)',
    'feature_table': "() -> 'str'",
    'conv_corners': "(kernel_size: 'Sequence[int]', padding: 'Sequence[int] | int' = 0, dilation: 'Sequence[int] | int' = 1) -> 'tuple[tuple[int, ...], tuple[int, ...]]'",
    'fence_acq_rel_cluster': '()',
    'fence_mbarrier_init': '()',
    'fence_proxy_async': '(space=None)',
    'fence_proxy_tensormap': "(tensor_map, scope='sys')",
    'inspect': "(kernel_or_pyfunc: 'Any', *argtypes_or_args: 'Any', cc: 'tuple[int, int] | None' = None) -> 'InspectReport'",
    'is_checked': "() -> 'bool'",
    'is_explicit_cluster': '()',
    'launch': "(kernel: 'Any', grid: 'Dim', block: 'Dim', args: 'Sequence[Any]' = (), *, cluster: 'Dim | None' = None, shared_mem: 'int' = 0, stream: 'Any' = 0, non_portable: 'bool' = False) -> 'None'",
    'map_shared_rank': '(view, rank)',
    'max_active_clusters': "(kernel: 'Any', block: 'Dim', cluster: 'Dim | None' = None, *, args: 'Sequence[Any]' = (), shared_mem: 'int' = 0, non_portable: 'bool' = False, stream: 'Any' = 0) -> 'int'",
    'mbarrier_arrive': '(bar, count=1, *, sem=None, scope=None, cta_rank=None)',
    'mbarrier_arrive_drop': '(bar, count=1, *, sem=None, scope=None)',
    'mbarrier_arrive_drop_no_complete': '(bar, count)',
    'mbarrier_arrive_expect_tx': '(bar, nbytes, *, sem=None, scope=None, cta_rank=None)',
    'mbarrier_arrive_expect_tx_remote': '(bar, cta_rank, nbytes)',
    'mbarrier_arrive_no_complete': '(bar, count)',
    'mbarrier_arrive_remote': '(bar, cta_rank, count=1)',
    'mbarrier_complete_tx': '(bar, nbytes, *, scope=None)',
    'mbarrier_expect_tx': '(bar, nbytes, *, scope=None, cta_rank=None)',
    'mbarrier_expect_tx_remote': '(bar, cta_rank, nbytes)',
    'mbarrier_init': '(bar, count)',
    'mbarrier_inval': '(bar)',
    'mbarrier_pending_count': '(state)',
    'mbarrier_test_wait': '(bar, state, *, sem=None, scope=None)',
    'mbarrier_test_wait_parity': '(bar, parity, *, sem=None, scope=None)',
    'mbarrier_try_wait': '(bar, state, suspend_hint_ns=None, *, sem=None, scope=None)',
    'mbarrier_try_wait_parity': '(bar, parity, suspend_hint_ns=None, *, sem=None, scope=None)',
    'mbarrier_wait': '(bar, state)',
    'mbarrier_wait_parity': '(bar, parity)',
    'num_clusters': '()',
    'prefetch_tensormap': '(tensor_map, *, fence=True)',
    'set_checked': "(enabled: 'bool', *, timeout_ns: 'int | None' = None) -> 'None'",
    'sim': 'module',
    'wait_all': '()',
    'wait_group': '(n)',
    'wait_timeout_ns': "() -> 'int'",
}


def public_signature(obj) -> str:
    if isinstance(obj, _Intrinsic):  # the Python function behind the intrinsic
        s = inspect.signature(obj._defn.__wrapped__)
        return str(s.replace(parameters=list(s.parameters.values())[1:]))  # no typingctx
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return str(inspect.signature(obj))
    return type(obj).__name__


def test_every_pinned_name_is_public_with_its_signature():
    for name, sig in PINNED.items():
        assert name in ac.__all__, f"public name {name} was dropped"
        assert public_signature(getattr(ac, name)) == sig, name


def test_all_names_exist():
    for name in ac.__all__:
        assert hasattr(ac, name), name
    assert len(set(ac.__all__)) == len(ac.__all__)
