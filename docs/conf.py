"""Sphinx configuration: MyST pages under docs/, autodoc for the API.

Numba and numba-cuda document with Sphinx, so this site does too (MyST lets
the pages stay Markdown).  ``make docs`` builds it with warnings as errors.
The API reference is generated at build time from the package itself
(``_ext/ac_reference.py``: the registry of PTX forms and the rulebook).
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the package of this checkout
sys.path.insert(0, os.path.join(HERE, "_ext"))

import numba_asynccopy  # noqa: E402

project = "numba-asynccopy"
author = "the numba-asynccopy authors"
copyright = "the numba-asynccopy authors"
release = version = numba_asynccopy.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "ac_reference"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
html_theme = "alabaster"
html_title = f"numba-asynccopy {release}"
html_static_path: list[str] = []
