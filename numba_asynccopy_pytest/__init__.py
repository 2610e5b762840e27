"""The pytest plugin of numba-asynccopy: run a test on the GPU and in the
CUDA simulator, sweep interleaving seeds, check traps, run compute-sanitizer.

Installed with the package and loaded by pytest through its entry point
(``pytest11``); it does nothing to a test that uses none of its names, and
importing it imports neither Numba nor the package (the simulator must be
switched on before Numba is imported, so the simulator side runs in a child
process with ``NUMBA_ENABLE_CUDASIM=1``).

Names (docs/testing.md):

- ``@pytest.mark.asynccopy_both``: the test becomes two items, ``[gpu]``
  (in this process; skipped with the reason where there is no GPU) and
  ``[sim]`` (in a child process with the simulator; one item per seed,
  ``[sim-seed1]``..., with ``--asynccopy-sim-seeds``).  ``skip_gpu=`` /
  ``skip_sim=`` (a reason) skip one side; ``isolated=True`` runs the
  ``[gpu]`` side in a fresh process too (a kernel that may trap: a trap
  ends the CUDA context of its process).  A simulator that cannot run an
  instruction skips the ``[sim]`` item with its words.
- ``@pytest.mark.asynccopy_traps(match)``: the test launches a kernel that
  traps on purpose; each side runs it in a fresh process in checked mode and
  passes when the test raised and the trap's words ``match`` were reported.
- the ``compute_sanitizer`` fixture: the test runs once per tool
  (``[memcheck]``, ``[racecheck]``, ``[synccheck]``) in a child process
  under ``compute-sanitizer``, and fails on any error or hazard it reports.
- the ``asynccopy`` fixture: which side, seed, checked mode and tool the
  item runs with.

Options (command line, or the ini key without the leading dashes and with
underscores): ``--asynccopy-checked``, ``--asynccopy-wait-timeout-ns``,
``--asynccopy-sim-schedule``, ``--asynccopy-sim-seeds``,
``--asynccopy-sanitizer-tools``, ``--asynccopy-timeout``.  A bad value is a
``pytest.UsageError`` naming the option.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

# The package's names, kept here so that loading the plugin imports no Numba
# (tests/cpu/test_pytest_plugin.py pins them to the package's own).
CHECKED_ENV = "NUMBA_ASYNCCOPY_CHECKED"
TIMEOUT_ENV = "NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS"
SCHEDULE_ENV = "NUMBA_ASYNCCOPY_SIM_SCHEDULE"
SCHEDULES = ("worst", "eager")
SIM_ENV = "NUMBA_ENABLE_CUDASIM"
#: the simulator's words for an instruction it cannot run
SIM_CANNOT_RUN = "cannot run in the CUDA simulator"
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck")
#: checked mode's watchdog under compute-sanitizer, which slows kernels by
#: orders of magnitude (the project's `make gpu-sanitize` uses the same)
SANITIZER_WAIT_NS = 600_000_000_000
DEFAULT_TIMEOUT_S = 900.0

CHILD_ENV = "NUMBA_ASYNCCOPY_PYTEST_CHILD"
SIDE = "_asynccopy_side"
_SETTINGS = pytest.StashKey["Settings"]()
_STATE = pytest.StashKey[dict]()

MARKERS = (
    "asynccopy_both(skip_gpu=None, skip_sim=None, isolated=False): run the test on the GPU ([gpu]; "
    "in a fresh process with isolated=True) and in the CUDA simulator in a child process ([sim], "
    "or one [sim-seedN] per --asynccopy-sim-seeds)",
    "asynccopy_traps(match, checked=True): the test launches a kernel that traps on purpose; each "
    "side ([gpu], [sim]) runs in a fresh process and must raise and report `match`",
)


@dataclass
class Settings:
    """The plugin's options, validated (what a child process is given)."""

    checked: bool = False
    wait_timeout_ns: int | None = None
    sim_schedule: str | None = None
    sim_seeds: list[int] = field(default_factory=list)
    sanitizer_tools: list[str] = field(default_factory=lambda: list(SANITIZER_TOOLS))
    timeout_s: float = DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class Run:
    """What the ``asynccopy`` fixture gives a test: its side (``"gpu"`` or
    ``"sim"``, None outside the plugin's items), the interleaving seed
    (None: none), whether kernels compile in checked mode, and the
    compute-sanitizer tool (None: none)."""

    side: str | None
    seed: int | None
    checked: bool
    sanitizer: str | None


# --- options ------------------------------------------------------------------

_OPTIONS = (
    # (option, ini key, help)
    ("--asynccopy-checked", "asynccopy_checked",
     "compile the session's kernels in checked mode (ini: true/false)"),
    ("--asynccopy-wait-timeout-ns", "asynccopy_wait_timeout_ns",
     "checked mode's watchdog: blocking waits trap after this many nanoseconds (needs checked mode)"),
    ("--asynccopy-sim-schedule", "asynccopy_sim_schedule",
     "when simulated copies land: worst (default) or eager"),
    ("--asynccopy-sim-seeds", "asynccopy_sim_seeds",
     "comma-separated interleaving seeds; each is a [sim-seedN] item"),
    ("--asynccopy-sanitizer-tools", "asynccopy_sanitizer_tools",
     "comma-separated compute-sanitizer tools of the compute_sanitizer fixture "
     "(default memcheck,racecheck,synccheck)"),
    ("--asynccopy-timeout", "asynccopy_timeout",
     f"seconds a child process (simulator, trap, sanitizer) may run (default {DEFAULT_TIMEOUT_S:g})"),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("asynccopy", "numba-asynccopy: GPU and simulator runs")
    for opt, ini, help_ in _OPTIONS:
        if opt == "--asynccopy-checked":
            group.addoption(opt, action="store_const", const="true", default=None, dest=ini, help=help_)
        else:
            group.addoption(opt, default=None, dest=ini, metavar="VALUE", help=help_)
        parser.addini(ini, help_, type="string", default=None)


def _raw(config: pytest.Config, ini: str) -> tuple[str | None, str]:
    """The value of an option and where it came from (for the error)."""
    v = config.getoption(ini)
    if v is not None:
        return v, "--" + ini.replace("_", "-")
    v = config.getini(ini)
    if v is not None and v != "":
        return v, f"ini option {ini}"
    return None, ""


def _bad(where: str, value: str, want: str) -> pytest.UsageError:
    return pytest.UsageError(f"numba-asynccopy: {where}={value!r} {want}")


def _positive_int(where: str, raw: str, what: str) -> int:
    s = raw.strip()
    if not s.isascii() or not s.isdigit() or int(s) <= 0:
        raise _bad(where, raw, f"is not a positive integer ({what})")
    return int(s)


def _settings(config: pytest.Config) -> Settings:
    s = Settings()
    raw, where = _raw(config, "asynccopy_checked")
    if raw is not None:
        v = raw.strip().lower()
        if v in ("1", "true", "yes", "on"):
            s.checked = True
        elif v in ("0", "false", "no", "off"):
            s.checked = False
        else:
            raise _bad(where, raw, "is not a switch: use true or false")
    raw, where = _raw(config, "asynccopy_wait_timeout_ns")
    if raw is not None:
        s.wait_timeout_ns = _positive_int(where, raw, "nanoseconds, e.g. 2000000000 for 2 s")
        if not s.checked:
            raise pytest.UsageError(
                f"numba-asynccopy: {where} sets checked mode's watchdog, which only checked mode "
                "has: add --asynccopy-checked (or ini asynccopy_checked = true)")
    raw, where = _raw(config, "asynccopy_sim_schedule")
    if raw is not None:
        if raw.strip() not in SCHEDULES:
            raise _bad(where, raw, "is not a schedule: use worst or eager")
        s.sim_schedule = raw.strip()
    raw, where = _raw(config, "asynccopy_sim_seeds")
    if raw is not None:
        parts = [p.strip() for p in raw.split(",")]
        if not raw.strip() or any(not p for p in parts):
            raise _bad(where, raw, "is not a comma-separated list of integer seeds (e.g. 1,2,3)")
        seeds = []
        for p in parts:
            if not re.fullmatch(r"-?[0-9]+", p):
                raise _bad(where, raw, f"holds {p!r}, which is not an integer seed")
            seeds.append(int(p))
        if len(set(seeds)) != len(seeds):
            raise _bad(where, raw, "names a seed twice")
        s.sim_seeds = seeds
    raw, where = _raw(config, "asynccopy_sanitizer_tools")
    if raw is not None:
        tools = [p.strip() for p in raw.split(",")]
        unknown = [t for t in tools if t not in SANITIZER_TOOLS]
        if not raw.strip() or unknown:
            raise _bad(where, raw, f"is not a list of compute-sanitizer tools: use "
                       f"{', '.join(SANITIZER_TOOLS)} (comma-separated)")
        if len(set(tools)) != len(tools):
            raise _bad(where, raw, "names a tool twice")
        s.sanitizer_tools = tools
    raw, where = _raw(config, "asynccopy_timeout")
    if raw is not None:
        try:
            t = float(raw)
        except ValueError:
            t = float("nan")
        if not t > 0 or t == float("inf"):
            raise _bad(where, raw, "is not a positive number of seconds")
        s.timeout_s = t
    return s


def _child_info() -> dict | None:
    raw = os.environ.get(CHILD_ENV)
    return json.loads(raw) if raw else None


def pytest_configure(config: pytest.Config) -> None:
    for m in MARKERS:
        config.addinivalue_line("markers", m)
    child = _child_info()
    s = Settings(**child["settings"]) if child else _settings(config)
    config.stash[_SETTINGS] = s
    config.stash[_STATE] = {"sim_results": None, "sim_items": []}
    if s.checked and not child:
        # read by the package when it first needs the mode; set_checked as
        # well if the package was imported already
        os.environ[CHECKED_ENV] = "1"
        if s.wait_timeout_ns:
            os.environ[TIMEOUT_ENV] = str(s.wait_timeout_ns)
        if "numba_asynccopy.checked" in sys.modules:
            sys.modules["numba_asynccopy.checked"].set_checked(True, timeout_ns=s.wait_timeout_ns)


def _sim_here() -> bool:
    return os.environ.get(SIM_ENV) == "1"


# --- collection -------------------------------------------------------------


def _marker_kind(obj) -> tuple[str | None, Any]:
    traps = obj.get_closest_marker("asynccopy_traps")
    if traps is not None:
        return "traps", traps
    both = obj.get_closest_marker("asynccopy_both")
    if both is not None:
        return "both", both
    return None, None


def _check_reason(marker, key: str) -> str | None:
    v = marker.kwargs.get(key)
    if v is not None and (not isinstance(v, str) or not v.strip()):
        raise pytest.UsageError(f"numba-asynccopy: @pytest.mark.{marker.name}({key}=...) must be "
                                f"a reason (a non-empty str), got {v!r}")
    return v


def _trap_words(marker) -> str:
    args = list(marker.args) + ([marker.kwargs["match"]] if "match" in marker.kwargs else [])
    if len(args) != 1 or not isinstance(args[0], str) or not args[0]:
        raise pytest.UsageError(
            "numba-asynccopy: @pytest.mark.asynccopy_traps needs the trap's words once, as a "
            f"non-empty str (asynccopy_traps('mbarrier_init: `bar` is not in shared memory')), "
            f"got args={marker.args!r} kwargs={marker.kwargs!r}")
    checked = marker.kwargs.get("checked", True)
    if not isinstance(checked, bool):
        raise pytest.UsageError(f"numba-asynccopy: @pytest.mark.asynccopy_traps(checked=...) must "
                                f"be True or False, got {checked!r}")
    return args[0]


def _allowed_kwargs(marker, allowed: tuple[str, ...]) -> None:
    extra = sorted(set(marker.kwargs) - set(allowed))
    if extra:
        raise pytest.UsageError(f"numba-asynccopy: @pytest.mark.{marker.name} takes "
                                f"{', '.join(allowed)}, not {', '.join(extra)}")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    s = metafunc.config.stash[_SETTINGS]
    kind, marker = _marker_kind(metafunc.definition)
    if kind == "both":
        _allowed_kwargs(marker, ("skip_gpu", "skip_sim", "isolated"))
        if marker.args:
            raise pytest.UsageError("numba-asynccopy: @pytest.mark.asynccopy_both takes keywords "
                                    f"only (skip_gpu=, skip_sim=, isolated=), got {marker.args!r}")
        if not isinstance(marker.kwargs.get("isolated", False), bool):
            raise pytest.UsageError("numba-asynccopy: @pytest.mark.asynccopy_both(isolated=...) must "
                                    f"be True or False, got {marker.kwargs['isolated']!r}")
        _check_reason(marker, "skip_gpu")
        _check_reason(marker, "skip_sim")
        sims = [f"sim-seed{n}" for n in s.sim_seeds] or ["sim"]
    elif kind == "traps":
        _allowed_kwargs(marker, ("match", "checked"))
        _trap_words(marker)
        sims = ["sim"]
    if kind:
        # a parameter the test function does not take (as pytest-repeat does)
        metafunc.fixturenames.append(SIDE)
        metafunc.parametrize(SIDE, ["gpu"] + sims, indirect=True)
    if "compute_sanitizer" in metafunc.fixturenames:
        metafunc.parametrize("compute_sanitizer", s.sanitizer_tools, indirect=True)


@pytest.fixture
def _asynccopy_side(request) -> str:
    return request.param


@pytest.fixture
def compute_sanitizer(request) -> str:
    """Run this test under compute-sanitizer, once per tool
    (``--asynccopy-sanitizer-tools``, default memcheck, racecheck and
    synccheck), each in a child process; the item fails on any error or
    hazard the tool reports.  Skipped where there is no compute-sanitizer
    or no GPU.  The value is the tool's name."""
    return request.param


@pytest.fixture
def asynccopy(request) -> Run:
    """Which side, seed, checked mode and compute-sanitizer tool this item
    runs with (a :class:`Run`)."""
    s = request.config.stash[_SETTINGS]
    info = _item_info(request.node)
    checked = s.checked or info["kind"] == "traps"
    if info["side"] == "sim" and _child_info() is not None:
        checked = os.environ.get(CHECKED_ENV) == "1"
    return Run(info["side"], info["seed"], checked, info["tool"])


def _item_info(item) -> dict:
    params = getattr(getattr(item, "callspec", None), "params", {})
    side_id = params.get(SIDE)
    kind, marker = _marker_kind(item)
    seed = None
    side = None
    if side_id is not None:
        side = "gpu" if side_id == "gpu" else "sim"
        if side_id.startswith("sim-seed"):
            seed = int(side_id[len("sim-seed"):])
    return {"side": side, "seed": seed, "kind": kind if side_id else None, "marker": marker,
            "tool": params.get("compute_sanitizer")}


class ChildItem(pytest.Item):
    """An item that runs in a child process: the simulator side, a trap, a
    compute-sanitizer run.  It keeps the original item's name, markers and
    location; its fixtures are set up in the child only."""

    def __init__(self, *, original: pytest.Function, info: dict, **kw):
        super().__init__(**kw)
        self.original = original
        self.info = info
        self.own_markers = list(original.own_markers)
        self.keywords.update(original.keywords)

    def reportinfo(self):
        return self.original.reportinfo()

    def runtest(self) -> None:
        _run_child_item(self)

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, _ChildFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class _ChildFailed(AssertionError):
    pass


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items) -> None:
    if _child_info() is not None:
        return
    state = config.stash[_STATE]
    for i, item in enumerate(items):
        if not isinstance(item, pytest.Function):
            continue
        info = _item_info(item)
        isolated = info["kind"] == "both" and info["marker"].kwargs.get("isolated", False)
        in_child = (info["tool"] is not None or info["kind"] == "traps"
                    or (info["side"] == "sim" and not _sim_here())
                    or (info["side"] == "gpu" and isolated))
        if not in_child:
            continue
        child = ChildItem.from_parent(item.parent, name=item.name, original=item, info=info)
        items[i] = child
        if info["side"] == "sim" and info["kind"] == "both" and info["tool"] is None:
            state["sim_items"].append(child)


# --- skips --------------------------------------------------------------------

_GPU: dict[str, str | None] = {}


def gpu_missing() -> str | None:
    """Why this process cannot run a GPU item (None: it can).  Imports
    numba.cuda the first time a GPU item asks."""
    if "reason" not in _GPU:
        if _sim_here():
            _GPU["reason"] = (f"the CUDA simulator is on in this process ({SIM_ENV}=1): the [gpu] "
                              "items need a run without it")
        else:
            try:
                from numba import cuda

                ok = cuda.is_available()
                why = "" if ok else "numba.cuda.is_available() is False"
            except Exception as e:  # a broken driver install says why
                ok, why = False, f"{type(e).__name__}: {e}"
            _GPU["reason"] = None if ok else f"no CUDA GPU ({why})"
    return _GPU["reason"]


def find_sanitizer() -> str | None:
    """compute-sanitizer on PATH, under $CUDA_HOME/bin or /usr/local/cuda/bin."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "compute-sanitizer").is_file():
            return str(Path(root) / "bin" / "compute-sanitizer")
    return None


def pytest_runtest_setup(item) -> None:
    info = item.info if isinstance(item, ChildItem) else _item_info(item)
    marker = info["marker"]
    if info["side"] == "gpu" and marker is not None and marker.kwargs.get("skip_gpu"):
        pytest.skip(f"[gpu] skipped by the test: {marker.kwargs['skip_gpu']}")
    if info["side"] == "sim" and marker is not None and marker.kwargs.get("skip_sim"):
        pytest.skip(f"[sim] skipped by the test: {marker.kwargs['skip_sim']}")
    if _child_info() is not None:
        return
    if info["tool"] is not None:
        if info["side"] == "sim":
            pytest.skip("compute-sanitizer checks GPU runs; the [sim] side has none")
        why = gpu_missing()
        if why:
            pytest.skip(f"compute-sanitizer needs a GPU: {why}")
        if find_sanitizer() is None:
            pytest.skip("compute-sanitizer not found (on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin)")
    elif info["side"] == "gpu":
        why = gpu_missing()
        if why:
            pytest.skip(why)


# --- running in this process ------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    """The [sim] side in a simulator process (a child, or a run with
    NUMBA_ENABLE_CUDASIM=1): the options' schedule and the item's seed
    around the call; an instruction the simulator cannot run skips; a trap
    item records what it raised."""
    info = _item_info(pyfuncitem)
    if info["side"] != "sim" and info["kind"] != "traps":
        return (yield)
    import contextlib

    with contextlib.ExitStack() as stack:
        if info["side"] == "sim":
            from numba_asynccopy import sim

            s = pyfuncitem.config.stash[_SETTINGS]
            if s.sim_schedule:
                stack.enter_context(sim.schedule(s.sim_schedule))
            if info["seed"] is not None:
                stack.enter_context(sim.seed(info["seed"]))
        try:
            result = yield
        except BaseException as e:
            if info["kind"] == "traps" and isinstance(e, Exception):
                _record({"nodeid": pyfuncitem.nodeid, "trap": f"{type(e).__name__}: {e}"})
                return True
            if info["side"] == "sim" and SIM_CANNOT_RUN in str(e):
                pytest.skip(f"the simulator cannot run this test: {str(e).splitlines()[0]}")
            raise
    if info["kind"] == "traps":
        _record({"nodeid": pyfuncitem.nodeid, "trap": None})
    return result


def _record(entry: dict) -> None:
    child = _child_info()
    if child is None:
        return
    with open(child["results"], "a") as f:
        f.write(json.dumps(entry) + "\n")


def pytest_runtest_logreport(report) -> None:
    if _child_info() is None:
        return
    reason = ""
    if report.skipped and isinstance(report.longrepr, tuple):
        reason = report.longrepr[2]
    text = "" if report.passed else str(report.longreprtext)
    captured = "".join(f"\n--- {name}\n{content}" for name, content in report.sections)
    _record({"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
             "reason": reason, "text": text, "captured": captured if report.failed else ""})


# --- running in a child process ---------------------------------------------


def _nodeid_arg(config, nodeid: str) -> str:
    path, sep, rest = nodeid.partition("::")
    return str(config.rootpath / path) + sep + rest


def _run_children(config, items: list, *, side: str, trap: bool = False, tool: str | None = None,
                  checked: bool | None = None) -> tuple[dict, str, int | None]:
    """Run ``items`` in one child pytest; returns (records by node id, the
    child's output, its exit code or None when it ran out of time)."""
    s = config.stash[_SETTINGS]
    fd, results = tempfile.mkstemp(prefix="asynccopy-", suffix=".jsonl")
    os.close(fd)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT_TEST")) and k != "PYTEST_ADDOPTS"}
    env[CHILD_ENV] = json.dumps({"results": results, "settings": asdict(s)})
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(config.rootpath), *sys.path] if p)
    if side == "sim":
        env[SIM_ENV] = "1"
        if s.sim_schedule:
            env[SCHEDULE_ENV] = s.sim_schedule
    else:
        env.pop(SIM_ENV, None)
    on = s.checked if checked is None else checked
    if on:
        env[CHECKED_ENV] = "1"
        if s.wait_timeout_ns:
            env[TIMEOUT_ENV] = str(s.wait_timeout_ns)
    cmd = [sys.executable, "-m", "pytest", "-p", __name__, "-p", "no:cacheprovider",
           "-o", "addopts=", "-q", "--rootdir", str(config.rootpath)]
    if config.inipath is not None:
        cmd += ["-c", str(config.inipath)]
    if trap or tool:
        cmd.append("-s")  # device printf and the sanitizer's report reach the output
    cmd += [_nodeid_arg(config, it.nodeid) for it in items]
    if tool:
        env.setdefault(TIMEOUT_ENV, str(SANITIZER_WAIT_NS))
        cmd = [find_sanitizer() or "compute-sanitizer", "--tool", tool, "--error-exitcode", "9"] + cmd
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=s.timeout_s,
                              cwd=str(config.invocation_params.dir))
        out, rc = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:
        def txt(b):
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        out, rc = txt(e.stdout) + txt(e.stderr), None
    records: dict[str, list[dict]] = {}
    try:
        with open(results) as f:
            for line in f:
                r = json.loads(line)
                records.setdefault(r["nodeid"], []).append(r)
    finally:
        os.unlink(results)
    return records, out, rc


def _tail(out: str, n: int = 60) -> str:
    lines = out.rstrip().splitlines()
    return "\n".join(lines[-n:])


def _verdict(item, recs: list[dict], out: str, rc: int | None, what: str) -> None:
    """Pass, skip or fail ``item`` as its child did."""
    timeout = item.config.stash[_SETTINGS].timeout_s
    if rc is None and not any(r.get("when") == "call" for r in recs):
        raise _ChildFailed(f"{what} ran past --asynccopy-timeout={timeout:g} s (a hang?)\n{_tail(out)}")
    if not recs:
        raise _ChildFailed(f"{what} exited with code {rc} without running {item.nodeid}\n{_tail(out)}")
    for r in recs:
        if r.get("outcome") == "failed":
            errors = [ln[1:].strip() for ln in r["text"].splitlines() if ln.startswith("E ")]
            first = errors[0] if errors else r["text"].strip().splitlines()[-1:] or [""]
            first = first if isinstance(first, str) else first[0]
            raise _ChildFailed(f"{first}\n({what}: {r['when']} failed)\n{r['text']}"
                               f"{r.get('captured', '')}")
    for r in recs:
        if r.get("outcome") == "skipped":
            pytest.skip(r["reason"] or "skipped in the child process")


def _run_child_item(item: ChildItem) -> None:
    info, config = item.info, item.config
    if info["kind"] == "traps":
        return _run_trap(item)
    if info["tool"] is not None:
        return _run_sanitizer(item)
    if info["side"] == "gpu":  # isolated=True
        records, out, rc = _run_children(config, [item], side="gpu")
        return _verdict(item, records.get(item.nodeid, []), out, rc, "the fresh GPU process")
    state = config.stash[_STATE]
    if hasattr(config, "workerinput") or item not in state["sim_items"]:
        records, out, rc = _run_children(config, [item], side="sim")
    else:
        if state["sim_results"] is None:
            # every [sim] item of the session in one simulator process
            state["sim_results"] = _run_children(config, state["sim_items"], side="sim")
        records, out, rc = state["sim_results"]
    _verdict(item, records.get(item.nodeid, []), out, rc, "the simulator process")


def _run_trap(item: ChildItem) -> None:
    marker = item.info["marker"]
    words = _trap_words(marker)
    side = item.info["side"]
    checked = marker.kwargs.get("checked", True)
    records, out, rc = _run_children(item.config, [item], side=side, trap=True, checked=checked)
    recs = records.get(item.nodeid, [])
    what = f"the fresh {'simulator' if side == 'sim' else 'GPU'} process"
    _verdict(item, recs, out, rc, what)
    trapped = [r["trap"] for r in recs if "trap" in r]
    if not trapped or trapped[0] is None:
        raise _ChildFailed(f"{what}: the test raised nothing; expected a trap reporting {words!r}"
                           f"\n{_tail(out)}")
    if words not in trapped[0] and words not in out:
        raise _ChildFailed(f"{what}: the test raised {trapped[0][:2000]}\nbut neither that nor the "
                           f"process output reports the trap's words {words!r}\n{_tail(out)}")


_SANITIZER_ERRORS = re.compile(r"(ERROR SUMMARY|RACECHECK SUMMARY): ([1-9][0-9]*) (errors?|hazards?)")


def _run_sanitizer(item: ChildItem) -> None:
    tool = item.info["tool"]
    records, out, rc = _run_children(item.config, [item], side="gpu", tool=tool)
    found = _SANITIZER_ERRORS.findall(out)
    if found or rc == 9:
        summary = ", ".join(f"{n} {kind}" for _, n, kind in found) or "exit code 9"
        raise _ChildFailed(f"compute-sanitizer --tool {tool} reported {summary}\n{_tail(out, 80)}")
    _verdict(item, records.get(item.nodeid, []), out, rc, f"compute-sanitizer --tool {tool}")
    if not re.search(r"(ERROR|RACECHECK) SUMMARY: 0 ", out):
        raise _ChildFailed(f"compute-sanitizer --tool {tool} printed no summary (did it run?)\n"
                           f"{_tail(out)}")
