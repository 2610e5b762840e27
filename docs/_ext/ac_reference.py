"""Sphinx extension: the API reference, generated from the package.

At ``builder-inited`` it writes ``api/generated/*.md`` (git-ignored), one
page per family, for every name in ``numba_asynccopy.__all__`` plus
``ac.pipeline``: the docstring and signature through autodoc, and for each
device function its PTX forms, PTX ISA and sm from the registry
(``_forms.py``) and the rules checked mode and the simulator apply to each
argument from the checks' declarations (``checked.CHECKS``, whose words are
the rulebook's, ``_rules.py``).  A public name left out of every page is a
build error.
"""

from __future__ import annotations

import os
from collections import defaultdict

# family module -> page title, in tutorial order
FAMILIES = {
    "cp_async": "cp.async: copies, groups, cache policies",
    "mbarrier": "mbarriers",
    "fence": "Fences and warp election",
    "bulk": "Bulk copies (1-D)",
    "tensor": "TMA tensor copies",
    "cluster": "Clusters and distributed shared memory",
    "vector": "Vector loads and stores, chunk views",
    "pragma": "Loop pragma",
    "mma": "Warp-level MMA: mma.sync, ldmatrix, stmatrix",
    "wgmma": "Warpgroup MMA (sm_90a)",
}
HOST = {
    "launch": ["launch", "max_active_clusters", "ClusterLaunchError", "LaunchTypeError"],
    "tensor_map": ["TensorMap", "TensorMapTypeError", "conv_corners"],
    "interop": ["as_device_array", "as_stream", "InteropError"],
    "bf16": ["bf16_array", "bf16_values"],
    "checked": ["checked_mode", "set_checked", "is_checked", "wait_timeout_ns", "ContractError"],
    "inspect": ["inspect", "feature_table", "FORMS"],
}
HOST_TITLES = {
    "launch": "Launching kernels",
    "tensor_map": "Tensor maps",
    "interop": "PyTorch, CuPy and DLPack",
    "checked": "Checked mode and contract errors",
    "inspect": "Inspecting kernels and the registry",
    "bf16": "bf16 data on the host",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    ticks = "``" if "`" in text else "`"
    pad = " " if ticks == "``" else ""
    return f"{ticks}{pad}{_cell(text)}{pad}{ticks}"


def device_pages() -> dict[str, list[str]]:
    """family module -> its device functions, in ``__all__`` order."""
    import numba_asynccopy as ac
    from numba_asynccopy._forms import family_of

    pages: dict[str, list[str]] = defaultdict(list)
    for name in ac.__all__:
        fam = family_of(name)
        if fam is None and name in ac._VECTOR_API:
            fam = "vector"
        if fam is None and name in ac._PRAGMA_API:
            fam = "pragma"
        if fam is None and name in getattr(ac, "_MMA_API", ()):
            fam = "mma"
        if fam is None and name in getattr(ac, "_WGMMA_API", ()):
            fam = "wgmma"
        if fam is not None:
            pages[fam].append(name)
    return pages


def forms_of(name: str) -> list:
    from numba_asynccopy._forms import FORMS

    return [row for row in FORMS.values() if name in row.apis]


def checks_of(name: str) -> dict[str, list]:
    from numba_asynccopy import checked

    out: dict[str, list] = defaultdict(list)
    for c in checked.CHECKS:
        if c.api == name:
            out[c.argument].append(c)
    return out


def device_section(qualname: str, name: str) -> str:
    lines = [f"## `{name}`", "", "```{eval-rst}", f".. autofunction:: {qualname}", "```", ""]
    rows = forms_of(name.rsplit(".", 1)[-1]) if not name.startswith("pipeline.") else []
    if rows:
        lines += ["PTX forms (from the registry):", "",
                  "| PTX | min PTX ISA | min sm | also emitted by |", "|---|---|---|---|"]
        for row in rows:
            others = ", ".join(f"`{a}`" for a in row.apis if a != name) or "-"
            lines.append(f"| {_code(row.syntax)} | {row.min_ptx} | sm_{row.min_sm} | {others} |")
        lines.append("")
    elif not name.startswith("pipeline."):
        lines += ["No PTX form of its own: any sm the package targets (sm_80 and newer).", ""]
    checks = checks_of(name)
    if checks:
        lines += ["Rules checked at compile time for constants, and for run-time values in "
                  "checked mode and in the simulator (the same words):", "",
                  "| argument | rule | the error's words (… is the run-time value) |",
                  "|---|---|---|"]
        for arg, cs in sorted(checks.items()):
            for c in cs:
                rule = f"`{c.rule}`" if c.rule else "-"
                lines.append(f"| {_cell(arg)} | {rule} | {_cell(c.text)} |")
        lines.append("")
    return "\n".join(lines)


def write_pages(outdir: str) -> list[str]:
    """Write the generated pages; return the public names they document."""
    import numba_asynccopy as ac
    import numba_asynccopy.pipeline as pl

    os.makedirs(outdir, exist_ok=True)
    documented: list[str] = []
    pages = device_pages()
    files: dict[str, str] = {}
    order = [f for f in FAMILIES if f in pages] + sorted(set(pages) - set(FAMILIES))
    for i, fam in enumerate(order):
        body = [f"# {FAMILIES.get(fam, fam)}", "",
                f"Device functions of `numba_asynccopy/{fam}.py`, called inside `@cuda.jit` kernels.", ""]
        for name in pages[fam]:
            body.append(device_section(f"numba_asynccopy.{name}", name))
            documented.append(name)
        files[f"{i:02d}-{fam}.md"] = "\n".join(body)
    body = ["# Pipelines (`ac.pipeline`)", "", "```{eval-rst}", ".. automodule:: numba_asynccopy.pipeline",
            "   :no-members:", "```", ""]
    for name in pl.__all__:
        obj = getattr(pl, name)
        if isinstance(obj, type):
            body += ["```{eval-rst}", f".. autoclass:: numba_asynccopy.pipeline.{name}", "```", ""]
        else:
            body.append(device_section(f"numba_asynccopy.pipeline.{name}", f"pipeline.{name}"))
    files[f"{len(order):02d}-pipeline.md"] = "\n".join(body)
    n = len(order) + 1
    for j, (key, names) in enumerate(HOST.items()):
        body = [f"# {HOST_TITLES[key]}", ""]
        for name in names:
            obj = getattr(ac, name)
            if isinstance(obj, type):
                directive = f".. autoexception:: numba_asynccopy.{name}" if issubclass(obj, BaseException) \
                    else f".. autoclass:: numba_asynccopy.{name}\n   :members:"
            elif callable(obj):
                directive = f".. autofunction:: numba_asynccopy.{name}"
            else:
                directive = (f".. py:data:: numba_asynccopy.{name}\n\n"
                             f"   The registry of PTX forms: {len(obj)} rows keyed by a short name "
                             "(see {doc}`../../reference/features`).")
            body += [f"## `{name}`", "", "```{eval-rst}", directive, "```", ""]
            documented.append(name)
        if key == "interop":  # the torch.library bridge (imports torch only when called)
            body += ["## `numba_asynccopy.torch`", "", "```{eval-rst}",
                     ".. autofunction:: numba_asynccopy.torch.custom_op", "",
                     ".. autoclass:: numba_asynccopy.torch.LaunchRule", "```", ""]
        files[f"{n + j:02d}-{key}.md"] = "\n".join(body)
    body = ["# The simulator (`ac.sim`)", "", "```{eval-rst}", ".. automodule:: numba_asynccopy.sim",
            "   :members: " + ", ".join(n for n in ac.sim.__all__ if callable(getattr(ac.sim, n))),
            "```", ""]
    documented.append("sim")
    files[f"{n + len(HOST):02d}-sim.md"] = "\n".join(body)
    try:  # the helpers for users' tests, where this build has them
        import numba_asynccopy.testing as testing
    except ImportError:
        testing = None
    if testing is not None:
        members = [m for m in getattr(testing, "__all__", []) if callable(getattr(testing, m))]
        body = ["# Testing helpers (`numba_asynccopy.testing`)", "", "```{eval-rst}",
                ".. automodule:: numba_asynccopy.testing", "   :members: " + ", ".join(members),
                "```", ""]
        files[f"{n + len(HOST) + 1:02d}-testing.md"] = "\n".join(body)
    missing = sorted(set(ac.__all__) - set(documented))
    if missing:
        raise RuntimeError(f"the API reference leaves out public names: {missing}")
    for old in os.listdir(outdir):
        if old.endswith(".md") and old not in files:
            os.remove(os.path.join(outdir, old))
    for fname, text in files.items():
        path = os.path.join(outdir, fname)
        text = text.rstrip() + "\n"
        if not os.path.exists(path) or open(path).read() != text:  # keep mtimes: incremental builds
            with open(path, "w") as f:
                f.write(text)
    return documented


def _generate(app) -> None:
    write_pages(os.path.join(app.srcdir, "api", "generated"))


def setup(app):
    app.connect("builder-inited", _generate)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
