"""ac.pragma_nounroll(): CUDA C++'s ``#pragma unroll 1`` for Numba loops.
The loop around the call gets LLVM's unroll-disable metadata, NVVM keeps it
rolled and writes PTX's ``.pragma "nounroll"``; the marker never reaches
the PTX; a call outside every loop is a compile-time error."""

from __future__ import annotations

import numpy as np
import pytest
from llvmlite import ir
from numba import cuda, types

import numba_asynccopy as ac
from numba_asynccopy import pragma
from numba_asynccopy._compat import ContractError

SIG = (types.float32[::1], types.int32)


def ptx_of(fn, sig=SIG):
    ptx, _ = cuda.compile_ptx(fn, sig, cc=(9, 0))
    return ptx


def grid_stride(a, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        ac.pragma_nounroll()
        a[i] = a[i] * 2.0 + 1.0


def grid_stride_plain(a, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        a[i] = a[i] * 2.0 + 1.0


def test_the_loop_stays_rolled_and_ptx_carries_the_pragma():
    marked, plain = ptx_of(grid_stride), ptx_of(grid_stride_plain)
    assert marked.count('.pragma "nounroll";') == 1, marked
    assert pragma.MARKER not in marked and "numba_asynccopy" not in marked
    # the marked loop keeps its one load; so does the plain loop now, which
    # the package keeps from NVVM's run-time unrolling (four copies plus a
    # remainder loop: five loads) without the pragma: ptxas may still unroll it
    assert (plain.count("ld.global.f32"), marked.count("ld.global.f32")) == (1, 1)
    assert '.pragma "nounroll";' not in plain


def while_loop(a, n):
    i = cuda.grid(1)
    while i < n:
        ac.pragma_nounroll()
        a[i] += 1.0
        i += cuda.gridsize(1)


def test_a_while_loop_takes_it_too():
    assert ptx_of(while_loop).count('.pragma "nounroll";') == 1


def outer_marked(a, n):
    for i in range(n):
        ac.pragma_nounroll()
        for j in range(n):
            a[j] += np.float32(i)


def inner_marked(a, n):
    for i in range(n):
        for j in range(n):
            ac.pragma_nounroll()
            a[j] += np.float32(i)
            ac.pragma_nounroll()  # twice in one loop: still one loop marked


def test_nested_loops_mark_the_innermost_around_the_call():
    # the loop around the call, once: the other loop is NVVM's to unroll
    # (the inner one in outer_marked is unrolled four times)
    o, i = ptx_of(outer_marked), ptx_of(inner_marked)
    assert o.count('.pragma "nounroll";') == 1 and i.count('.pragma "nounroll";') == 1
    # the unmarked loop is not unrolled at run time either (the package
    # keeps NVVM from it: it was 4 + a remainder, 7 adds), but carries no
    # pragma: one add each
    assert (o.count("add.f32"), i.count("add.f32")) == (1, 1)


def scale_rows(a, n):
    for i in range(n):
        ac.pragma_nounroll()
        a[i] *= 2.0


def test_inside_a_device_function():
    ptx, _ = cuda.compile_ptx(scale_rows, SIG, device=True, cc=(9, 0))
    # a device function takes generic pointers: ld.f32
    assert ptx.count('.pragma "nounroll";') == 1 and ptx.count("ld.f32") == 1, ptx


def outside(a, n):
    ac.pragma_nounroll()
    a[0] = 1.0


def test_outside_every_loop_is_a_compile_time_error():
    with pytest.raises(ac.ContractError) as e:
        ptx_of(outside)
    assert str(e.value) == ("pragma_nounroll: the call is not inside a loop; call it in the body "
                            "of the loop that must not be unrolled")


def test_arguments_are_refused():
    def bad(a, n):
        for i in range(n):
            ac.pragma_nounroll(4)
    # the typing's own contract error, first line exact
    with pytest.raises(ContractError) as e:
        ptx_of(bad)
    assert str(e.value).splitlines()[0] == "pragma_nounroll: too many positional arguments"


def test_loops_innermost_first_on_a_hand_built_cfg():
    """entry -> h1 -> h2 -> b2 -> h2 (inner), h2 -> l1 -> h1 (outer), h1 -> exit."""
    m = ir.Module()
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [ir.IntType(1)]), "f")
    c = fn.args[0]
    entry, h1, h2, b2, l1, ex = (fn.append_basic_block(n) for n in ("entry", "h1", "h2", "b2", "l1", "exit"))
    ir.IRBuilder(entry).branch(h1)
    ir.IRBuilder(h1).cbranch(c, h2, ex)
    ir.IRBuilder(h2).cbranch(c, b2, l1)
    ir.IRBuilder(b2).branch(h2)
    ir.IRBuilder(l1).branch(h1)
    ir.IRBuilder(ex).ret_void()
    loops = {h.name: (sorted(b.name for b in body), [u.name for u in us]) for h, body, us in pragma._loops(fn)}
    assert loops == {"h1": (["b2", "h1", "h2", "l1"], ["l1"]), "h2": (["b2", "h2"], ["b2"])}
