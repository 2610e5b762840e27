"""Every private numba-cuda name the two internals modules touch still exists.

Each module lists its names as data (``NAMES``: looked up with getattr;
``CODE_NAMES``: an attribute a numba-cuda function sets, or a local it
has); this test reads those lists, so a numba-cuda upgrade that moves one
fails here.  The simulator's modules import without enabling the simulator,
so its names are checked in the CPU suite too.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from types import ModuleType
from typing import Any

import pytest

from numba_asynccopy.host import _numba_internals
from numba_asynccopy.sim import _numba_sim_internals

OWNERS = (_numba_internals, _numba_sim_internals)


def _resolve(module: str, dotted: str) -> Any:
    obj: Any = importlib.import_module(module)
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _short(owner: ModuleType) -> str:
    return owner.__name__.rsplit(".", 1)[1]


NAMES = [(_short(o), m, n) for o in OWNERS for m, n in o.NAMES]
CODE_NAMES = [(_short(o), m, f, n) for o in OWNERS for m, f, n in o.CODE_NAMES]


@pytest.mark.parametrize("owner,module,name", NAMES, ids=[f"{o}:{m}.{n}" for o, m, n in NAMES])
def test_name_exists(owner, module, name):
    _resolve(module, name)


@pytest.mark.parametrize("owner,module,func,name", CODE_NAMES,
                         ids=[f"{o}:{m}.{f}:{n}" for o, m, f, n in CODE_NAMES])
def test_function_still_names_it(owner, module, func, name):
    # the original when a patch (``__wrapped__``) replaced it
    code = inspect.unwrap(_resolve(module, func)).__code__
    assert name in code.co_names + code.co_varnames, f"{module}.{func} no longer names {name!r}"


#: how each internals module spells the numba-cuda modules it reaches into
ALIASES = {
    "_dispatcher": "numba.cuda.dispatcher",
    "_compiler": "numba.cuda.compiler",
    "simkernel": "numba.cuda.simulator.kernel",
    "kernelapi": "numba.cuda.simulator.kernelapi",
    "numpy_support": "numba.cuda.np.numpy_support",
}


@pytest.mark.parametrize("owner", OWNERS, ids=_short)
def test_the_lists_cover_the_code(owner):
    """Every ``<numba-cuda module>.<name>`` in the module's source is in its NAMES."""
    listed = {(m, n.split(".")[0]) for m, n in owner.NAMES}
    used = set()
    for node in ast.walk(ast.parse(inspect.getsource(owner))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in ALIASES:
            used.add((ALIASES[node.value.id], node.attr))
    assert used and used <= listed, sorted(used - listed)
