"""The package's environment settings, one parser for all of them.

Each setting is read where it is first needed (not at import), so a bad
value is a ``ValueError`` naming the variable, its value and what it takes,
raised where the setting is used rather than by an import that dies.
Unset and empty (or blank) values mean the setting's default.
"""

from __future__ import annotations

import os
from typing import Callable, TypeVar

T = TypeVar("T")


def env_error(var: str, raw: str | None, rule: str) -> ValueError:
    """The error of a bad value: ``environment variable VAR='raw' <rule>``."""
    return ValueError(f"environment variable {var}={raw!r} {rule}")


def env_setting(var: str, default: T, parse: Callable[[str], T | None], rule: str) -> T:
    """``var``'s value: ``default`` when unset or blank, else ``parse`` of
    the stripped text; ``parse`` returning None is a bad value
    (:func:`env_error` with ``rule``)."""
    raw = os.environ.get(var)
    value = (raw or "").strip()
    if not value:
        return default
    parsed = parse(value)
    if parsed is None:
        raise env_error(var, raw, rule)
    return parsed


def env_switch(var: str, default: bool, what: str) -> bool:
    """A 0/1 switch: ``1`` on, ``0`` off, unset or blank ``default``;
    anything else ``... is not a switch: use 1 (<what> on) or 0 (off)``."""
    return env_setting(var, default, {"1": True, "0": False}.get,
                       f"is not a switch: use 1 ({what} on) or 0 (off)")


def env_choice(var: str, choices: tuple[str, ...], what: str) -> str:
    """One of ``choices`` (the first when unset or blank); anything else
    ``... is not a <what>: use a or b``."""
    return env_setting(var, choices[0], lambda v: v if v in choices else None,
                       f"is not a {what}: use {' or '.join(choices)}")


def env_positive_int(var: str, default: int, rule: str) -> int:
    """A positive integer in decimal digits only (``int()`` would also take
    ``'+5'``, ``'1_000'``), ``default`` when unset or blank."""
    return env_setting(var, default,
                       lambda v: int(v) if v.isascii() and v.isdigit() and int(v) > 0 else None,
                       rule)


def env_int(var: str, rule: str) -> int | None:
    """Any integer as ``int()`` reads it, None when unset or blank."""
    def parse(v: str) -> int | None:
        try:
            return int(v)
        except ValueError:
            return None
    return env_setting(var, None, parse, rule)
