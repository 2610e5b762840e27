"""One test per row of the registry: its example compiles at the row's
``min_sm``, the PTX holds an instruction that maps back to the row, and one
target lower the same statement is refused with the row's named error.
The registry's structure (qualifier sets, gates, dispatch, ``__all__``) is
checked here too."""

from __future__ import annotations

import dataclasses
import re

import pytest
from numba import cuda, types

import numba_asynccopy as ac
from numba_asynccopy import _forms
from numba_asynccopy._forms import EXAMPLE_PRELUDE, FORMS

from .helpers import kernel_from_source

SIG = (types.float32[::1], types.uint64[::1], types.uint64[::1])
# targets NVVM compiles for, oldest first: "one lower" is the newest below min_sm
TARGETS = ((7, 5), (8, 0), (8, 6), (8, 9), (9, 0))
PUBLIC = [row for row in FORMS.values() if not row.internal]


def compile_example(row, cc):
    src = EXAMPLE_PRELUDE + "    " + row.example + "\n"
    fn = kernel_from_source(src, name="kernel")
    return cuda.compile_ptx(fn, SIG, cc=cc)[0]


def opcodes(ptx: str) -> set[str]:
    """Every opcode of the PTX text, plus the special registers it reads and
    the cluster directive, in the registry's spelling."""
    found = set()
    body = re.sub(r"//[^\n]*", "", ptx)
    for stmt in re.split(r"[;{}]", body):
        s = re.sub(r"^\s*(?:\$?[\w.]+:(?!:))?\s*(?:@!?%?\w+\s+)?", "", stmt).strip()
        if s:
            found.add(s.split()[0])
    found.update(re.findall(r"%[a-z_]+(?:\.[xyz])?", body))
    found.update(re.findall(r"^\s*(\.reqnctapercluster)\b", body, re.M))
    return found


def rows_in(ptx: str) -> set[str]:
    return {row.key for op in opcodes(ptx) for row in _forms.rows_for_opcode(op)}


@pytest.mark.parametrize("row", PUBLIC, ids=lambda r: r.key)
def test_row_example_compiles_at_min_sm_and_maps_back(row):
    ptx = compile_example(row, row.cc)  # (9, 0, "a") for an sm_90a form
    assert f".target {row.target}" in ptx
    want = row.key
    isa = _forms.nvvm_ptx_isa()
    if row.replaced_from and isa >= _forms.ptx_version(row.replaced_from):
        want = row.replaced_by  # this toolkit emits the newer form instead
    assert want in rows_in(ptx), (row.key, sorted(opcodes(ptx)))


@pytest.mark.parametrize("row", PUBLIC, ids=lambda r: r.key)
def test_row_example_is_refused_one_target_lower(row, monkeypatch):
    # an arch-specific form (sm_90a): one lower is the plain target of its sm
    older = [t for t in TARGETS if t[0] * 10 + t[1] < row.min_sm]
    if not row.arch and not older:
        # NVVM compiles for no older target (ldmatrix is sm_75): the gate
        # itself must refuse sm_72 with the same words
        monkeypatch.setattr(_forms, "compile_cc", lambda: (7, 2))
        with pytest.raises(Exception, match=rf"{row.apis[0]}: `[^`]+` needs sm_{row.min_sm} "
                           r"\(PTX ISA [\d.]+\); this kernel is compiled for sm_72"):
            row.gate(row.apis[0])
        return
    lower = row.cc[:2] if row.arch else max(older)
    with pytest.raises(Exception) as e:  # numba re-raises it as its own TypingError
        compile_example(row, lower)
    msg = str(e.value)
    # the first gated form of the statement names the call, its sm and the target
    m = re.search(r"(\w+): `[^`]+` needs sm_(\d+)(a?) \(PTX ISA [\d.]+\); this kernel is "
                  rf"compiled for sm_{lower[0]}{lower[1]}\b", msg)
    assert m, msg
    assert m.group(1) in row.apis and int(m.group(2)) == row.min_sm, msg
    assert m.group(3) == row.arch, msg


def test_qualifier_sets_expand_to_distinct_opcodes_and_fill_every_slot():
    for row in FORMS.values():
        slots = set(re.findall(r"\{(\w+)\}", row.opcode))
        assert slots == {name for name, _ in row.quals}, row.key
        texts = list(row.expansions())
        assert len(texts) == len(set(texts)), row.key
        for text in texts:
            assert "{" not in text and row.key in [r.key for r in _forms.rows_for_opcode(text)]


def test_the_gate_refuses_a_form_newer_than_the_toolkit(monkeypatch):
    """min_ptx is enforced: a toolkit whose NVVM emits an older PTX ISA
    than a form needs gets an error naming the form and both ISAs."""
    monkeypatch.setattr(_forms, "nvvm_ptx_isa", lambda: (8, 2))
    # (numba caches typing per argument types: a scope no other test compiles)
    row = dataclasses.replace(FORMS["fence.proxy.tensormap"],
                              example='ac.fence_proxy_tensormap(tm, "cluster")')
    with pytest.raises(Exception, match=re.escape(
            "fence_proxy_tensormap: `fence.proxy.tensormap::generic.acquire.{cta,cluster,gpu,sys} "
            "[tmap], 128;` needs PTX ISA 8.3; the installed NVVM emits PTX ISA 8.2")):
        compile_example(row, (9, 0))
    # forms an 8.2 toolkit has are still fine
    compile_example(FORMS["mbarrier.init"], (9, 0))


def test_the_gate_names_the_intrinsic_the_user_called():
    """cluster_sync emits the cluster barrier's arrive and wait: the error
    names cluster_sync, not the row's first function."""
    src = EXAMPLE_PRELUDE + "    ac.cluster_sync()\n"
    with pytest.raises(Exception, match=r"cluster_sync: `barrier\.cluster\.arrive"):
        cuda.compile_ptx(kernel_from_source(src, name="kernel"), SIG, cc=(8, 0))


def test_no_family_module_calls_the_gate_itself():
    import pathlib

    pkg = pathlib.Path(ac.__file__).parent
    for path in pkg.rglob("*.py"):
        if path.name != "_forms.py":
            assert "require_sm(" not in path.read_text() and ".gate(" not in path.read_text(), path


def test_every_public_api_of_the_registry_is_exported_and_dispatched():
    for api in _forms.public_apis():
        assert api in ac.__all__, api
        assert _forms.family_of(api) is not None
    assert set(_forms.public_apis()) <= set(ac.__all__)
