"""What the three copy suites (staged ``copy``, ``bulk``, ``tma``) share: the
output check, the torch copy row, the brief sweep and the fastest
configuration's full timing beside the same configuration with the ring
written by hand (the ``*_manual`` example: rows "pipeline vs hand-written")
and its CUDA C++ twin.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

# "Recorder" in the annotations is bench/suites.py's, which stands above this
# module (it runs the suites that share these rows)

#: a sweep entry: key, label, config, and a factory that compiles the kernel
#: and returns its launch
Entry = tuple[str, str, dict, Callable[[], Callable[[], None]]]


def _torch():
    """torch with TF32 off, or raise."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    return torch


def copy_check(src, dst) -> Callable[[Callable[[], None]], Callable[[], str]]:
    """check(launch): poison dst, launch, compare every word with src."""
    from . import devutil as du

    n = src.size

    def make(launch):
        return du.exact_check(launch, dst, src, f"{n} words (against the source)",
                              f"all {n} words equal the source")
    return make


def torch_row(r: "Recorder", key: str, label: str, src, dst, nbytes: float, check) -> None:
    """torch's device-to-device copy of ``src`` into ``dst``."""
    try:
        torch = _torch()
        # int32 views: torch has only partial support for uint32 tensors
        tsrc = torch.as_tensor(src.view(np.int32), device="cuda")
        tdst = torch.as_tensor(dst.view(np.int32), device="cuda")
        run = lambda: tdst.copy_(tsrc)  # noqa: E731
        r.measure(key, label, "torch", "TB/s", nbytes, run, check(run), config={"bytes": src.size * 4})
    except Exception as e:
        r.fail(key, label, "torch", "TB/s", f"error: {type(e).__name__}: {e}")


def sweep(r: "Recorder", entries: list[Entry], nbytes: float, check) -> tuple | None:
    """Measure each entry briefly; (measurement, launch) of the fastest ok one."""
    best = None
    for key, label, config, make_launch in entries:
        try:
            launch = make_launch()
            m = r.measure(key, label, "numba", "TB/s", nbytes, launch, check(launch),
                          reps=3 if r.quick else 7, config=config)
            if m.status == "ok" and (best is None or m.ms < best[0].ms):
                best = (m, launch)
        except Exception as e:
            r.fail(key, label, "numba", "TB/s", f"error: {type(e).__name__}: {e}")
    return best


#: the hand-written peer of a sweep: key, label, and a factory that compiles
#: the ``*_manual`` kernel for a configuration and returns its launch
Manual = tuple[str, str, Callable[[dict], Callable[[], None]]]


def fastest_then_twin(r: "Recorder", keys: tuple[str, str], labels: tuple[str, str],
                      entries: list[Entry], nbytes: float, check,
                      make_twin: Callable[[dict], Callable[[], None]],
                      manual: Manual | None = None) -> None:
    """Sweep ``entries``, time the fastest fully under ``keys[0]``, then (with
    ``manual``) the hand-written ring in that configuration, then the twin
    that ``make_twin(config)`` launches in it under ``keys[1]``."""
    (key, twin_key), (label, twin_label) = keys, labels
    best = sweep(r, entries, nbytes, check)
    if best is None:
        r.fail(key, label, "numba", "TB/s", "error: no configuration of the sweep ran (see the sweep rows)")
        if manual is not None:
            r.fail(manual[0], manual[1], "numba", "TB/s", "error: no configuration to mirror")
        r.fail(twin_key, twin_label, "cuda-c++", "TB/s", "error: no configuration to mirror")
        return
    m0, launch = best
    config = dict(m0.config)
    r.measure(key, label, "numba", "TB/s", nbytes, launch, check(launch), config=config)
    if manual is not None:
        manual_row(r, manual, config, nbytes, check)
    try:
        twin = make_twin(config)
        r.measure(twin_key, twin_label, "cuda-c++", "TB/s", nbytes, twin, check(twin), config=config)
    except Exception as e:
        r.fail(twin_key, twin_label, "cuda-c++", "TB/s", f"error: {type(e).__name__}: {e}")
    twin_best(r, twin_key, twin_label, [e[2] for e in entries], nbytes, check, make_twin)


def twin_best(r: "Recorder", twin_key: str, twin_label: str, configs: list[dict], nbytes: float,
              check, make_twin: Callable[[dict], Callable[[], None]]) -> None:
    """The twin swept over the same configurations as the Numba kernel
    (rows ``<twin_key>_sweep<i>``), its fastest timed fully as
    ``<twin_key>_best``: best of sweep against best of sweep, beside the
    same-configuration row."""
    best = None
    for i, config in enumerate(configs):
        key = f"{twin_key}_sweep{i}"
        try:
            twin = make_twin(config)
            m = r.measure(key, f"{twin_label}, sweep {config}", "cuda-c++", "TB/s", nbytes, twin,
                          check(twin), reps=3 if r.quick else 7, config=dict(config))
            if m.status == "ok" and (best is None or m.ms < best[0].ms):
                best = (m, twin)
        except Exception as e:
            r.fail(key, f"{twin_label}, sweep {config}", "cuda-c++", "TB/s", f"error: {type(e).__name__}: {e}")
    key = f"{twin_key}_best"
    if best is None:
        r.fail(key, f"{twin_label}, best of its sweep", "cuda-c++", "TB/s",
               "error: no configuration of the twin's sweep ran")
        return
    m0, twin = best
    r.measure(key, f"{twin_label}, best of its sweep {m0.config}", "cuda-c++", "TB/s", nbytes, twin,
              check(twin), config=dict(m0.config))


def manual_row(r: "Recorder", manual: Manual, config: dict, nbytes: float, check) -> None:
    """The hand-written ring in ``config``, measured like the pipelined one."""
    key, label, make = manual
    try:
        launch = make(config)
        r.measure(key, label, "numba", "TB/s", nbytes, launch, check(launch), config=config)
    except Exception as e:
        r.fail(key, label, "numba", "TB/s", f"error: {type(e).__name__}: {e}")
