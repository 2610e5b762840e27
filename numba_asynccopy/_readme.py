"""The README's generated parts, made from the code so they cannot drift.

Each part lies between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``
markers and is rebuilt by a function of the package: the feature table
from the registry of PTX forms, the checked-mode table from the checks'
declarations, the benchmark tables and the prose that quotes their
figures from the results the runs wrote (:mod:`.bench.published`).
``make readme-table`` runs :func:`write`; the CPU suite
fails while a part is stale.  A new generated part is one entry of
:data:`PARTS`.

Example::

    python -m numba_asynccopy._readme README.md     # rewrite what is stale
"""

from __future__ import annotations

import sys
from typing import Callable

from . import checked
from ._forms import feature_table
from .bench import published

#: marker name -> the function that makes the part
PARTS: dict[str, Callable[[], str]] = {
    "feature-table": feature_table,
    "checked-table": checked.checks_table,
    "bench-headline": published.headline,
    "bench-table": published.full_table,
    "bench-misses": published.misses,
    "bench-idioms": published.idioms_table,
    "bench-notes-2026-12-02": published.notes_2026_12_02,
    "bench-facts-ab": published.facts_ab_table,
    "bench-launch": published.launch_diag_table,
}


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:begin -->\n", f"\n<!-- {name}:end -->"


def parts_in(text: str) -> list[str]:
    """The generated parts ``text`` holds (both markers present)."""
    return [n for n in PARTS if all(m in text for m in _markers(n))]


def current(text: str, name: str) -> str:
    """What part ``name`` of ``text`` holds now."""
    begin, end = _markers(name)
    return text.split(begin, 1)[1].split(end, 1)[0]


def render(text: str) -> str:
    """``text`` with every generated part it holds rebuilt."""
    for name in parts_in(text):
        begin, end = _markers(name)
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + begin + PARTS[name]() + end + tail
    return text


def write(path: str) -> list[str]:
    """Rebuild the generated parts of the file at ``path``; the names of
    those that changed.  A file without any part is an error (a marker lost
    in an edit must not pass as "up to date")."""
    with open(path) as f:
        text = f.read()
    names = parts_in(text)
    if not names:
        raise ValueError(f"{path} holds none of the generated parts {sorted(PARTS)}")
    new = render(text)
    changed = [n for n in names if current(new, n) != current(text, n)]
    if new != text:
        with open(path, "w") as f:
            f.write(new)
    return changed


def main(argv: list[str]) -> int:
    for path in argv or ["README.md"]:
        changed = write(path)
        print(f"{path}: " + (", ".join(changed) + " rewritten" if changed else "up to date"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
