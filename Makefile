# Two commands do all the set-up on a fresh machine:
#   make demo   runs python -m numba_asynccopy
#   make test   runs the test suite (no GPU needed), then tests/sim and tests/gpu in the
#               CUDA simulator
# Both create or refresh .venv (the cu13 flavour) by themselves.
#   make test-cu12  the CPU layer (tests/cpu) against the cu12 flavour, in .venv-cu12
#   FLAVOUR=cu12    (make demo/test FLAVOUR=cu12) the same commands with the cu12
#                   flavour, in .venv-cu12
PYTHON ?= python3
FLAVOUR ?= cu13
ifeq ($(FLAVOUR),cu13)
VENV := .venv
EXTRAS := test
else ifeq ($(FLAVOUR),cu12)
VENV := .venv-cu12
EXTRAS := cu12,testing
else
$(error FLAVOUR must be cu13 or cu12, not '$(FLAVOUR)')
endif
VENV_CU12 := .venv-cu12
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-cpu test-cu12 readme-table gpu-test gpu-test-cu12 gpu-cu12-jitlink gpu-notebooks gpu-sanitize gpu-sanitize-examples device-wheels device-wheels-cu12 clean

# setuptools prints an informational notice for every editable install of a
# flat layout ("Editable installation ... folders with the same name as your
# package"); only that notice is silenced, any other warning still shows.
EDITABLE_QUIET := PYTHONWARNINGS="ignore:Editable installation:UserWarning"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(EDITABLE_QUIET) $(PY) -m pip install -q -e '.[$(EXTRAS)]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m numba_asynccopy

# The simulator must be on before numba.cuda is imported: its own process runs
# tests/sim and the GPU functional tests (tests/gpu; those marked skip_on_sim
# are listed by -ra with the reason).  Both runs spread their tests over
# JOBS pytest-xdist workers (auto: one per core; JOBS=0 runs in one process)
# and list the slowest tests (--durations).  The CPU layer sends whole files
# to a worker (--dist loadfile: a file's compile caches stay in one
# process; tests/conftest.py SHARED_WORKER sends files that share work to
# one worker); the simulator's tests go one by one to the first idle worker
# (--dist worksteal: tests/gpu/test_examples_gpu.py alone is about half of
# that run).  Here a missing or mismatched ptxas/nvdisasm fails the tests
# that need it instead of skipping them (NUMBA_ASYNCCOPY_REQUIRE_TOOLCHAIN=1).
JOBS ?= auto
PYTEST_FAST := -n $(JOBS) --durations=25
REQUIRE_TOOLCHAIN := NUMBA_ASYNCCOPY_REQUIRE_TOOLCHAIN=1
# The CPU run leaves out the directories whose every test needs the
# simulator or a GPU (tests/sim and tests/gpu run in the simulator step;
# tests/multigpu needs two GPUs): there they would only be collected and
# skipped, in every worker.
SIM_ONLY := --ignore=tests/sim --ignore=tests/gpu --ignore=tests/multigpu
test: $(STAMP)
	$(REQUIRE_TOOLCHAIN) $(PY) -m pytest -ra -q $(PYTEST_FAST) --dist loadfile $(SIM_ONLY)
	NUMBA_ENABLE_CUDASIM=1 $(PY) -m pytest -ra -q $(PYTEST_FAST) --dist worksteal tests/sim tests/gpu

# The documentation site (Sphinx + MyST + autodoc; docs/conf.py), warnings as
# errors, into docs/_build/html; the API reference is generated while it builds.
# First every ```python block of README.md and docs/ runs in the simulator
# (tests/docs/test_doc_examples.py): a failing example fails the build (DOCS_EXAMPLES=0 skips that,
# for CI, whose `make test` has just run them).
DOCS_EXAMPLES ?= 1
.PHONY: docs
docs: $(STAMP)
	$(if $(filter 1,$(DOCS_EXAMPLES)),$(PY) -m pytest -q -p no:cacheprovider tests/docs/test_doc_examples.py)
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html
	@echo "docs built: docs/_build/html/index.html"

# The differential census: every kernel of the GPU functional tests, the docs'
# programs and the notebooks, run in the simulator and compiled for sm_90a
# (no GPU needed); both must agree on what they accept, with the same words
# (tens of minutes; `make test` runs its quick subset).
.PHONY: differential-census
differential-census: $(STAMP)
	$(PY) -m tests.differential_kernels census

test-cpu: $(STAMP)
	$(REQUIRE_TOOLCHAIN) $(PY) -m pytest -ra -q $(PYTEST_FAST) --dist loadfile tests/cpu

# The cu12 flavour (NVVM, ptxas of CUDA 12): the CPU layer only; the
# simulator runs no NVVM, so the cu13 run above covers it (`make test
# FLAVOUR=cu12` runs both layers with cu12).
test-cu12:
	$(MAKE) --no-print-directory FLAVOUR=cu12 test-cpu

# the docs' feature table (from the registry of PTX forms), checked-mode
# table (from the checks' declarations) and the benchmark figures (from the
# results JSON under benchmarks/)
FEATURE_TABLE_PAGE := docs/reference/features.md
CHECKED_TABLE_PAGE := docs/tutorial/checked-mode.md
BENCH_PAGES := README.md docs/benchmarks.md
readme-table: $(STAMP)
	$(PY) -m numba_asynccopy._readme $(FEATURE_TABLE_PAGE) $(CHECKED_TABLE_PAGE) $(BENCH_PAGES)

# the type stub of the public API (numba_asynccopy/__init__.pyi; a CPU test
# fails when it is stale)
.PHONY: stubs
stubs: $(STAMP)
	$(PY) -m numba_asynccopy._stubs

# --- on a machine with a GPU (docs/running-tests.md) -----------------------
# Uses the machine's python3 and packages plus any wheels placed in .whl.
DEVICE_ENV := PYTHONPATH=/tmp/site:$(CURDIR) PYTHONUNBUFFERED=1
DEVICE_PY := $(DEVICE_ENV) python3

/tmp/site/.installed:
	python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl
	touch $@

gpu-test: /tmp/site/.installed
	$(DEVICE_PY) -m numba_asynccopy
	$(DEVICE_PY) -m pytest -ra -q -p no:cacheprovider tests/gpu --timeout=300

# the tutorial notebooks on the GPU, without Jupyter (tests/notebooks/execnb.py)
gpu-notebooks: /tmp/site/.installed
	$(DEVICE_PY) -m pytest -ra -q -p no:cacheprovider tests/notebooks -m gpu --timeout=900

# compute-sanitizer over the GPU tests that do not trap on purpose; narrow it
# with SANITIZE_TOOLS / SANITIZE_TESTS (racecheck is slow).  The tools slow
# kernels down by orders of magnitude, so checked mode's blocking-wait
# watchdog gets 600 s instead of 2 s (a real hang still ends in a trap; under
# racecheck the checked 8-CTA cluster exchange outlived a 60 s watchdog).
# --durations lists the slowest tests under each tool.
SANITIZE_TOOLS ?= memcheck racecheck synccheck
SANITIZE_TESTS ?= tests/gpu
SANITIZE_WAIT_NS ?= 600000000000
gpu-sanitize: /tmp/site/.installed
	status=0; for tool in $(SANITIZE_TOOLS); do \
	  echo "== compute-sanitizer --tool $$tool"; \
	  $(DEVICE_ENV) NUMBA_ASYNCCOPY_WAIT_TIMEOUT_NS=$(SANITIZE_WAIT_NS) \
	    compute-sanitizer --tool $$tool --error-exitcode 9 \
	    python3 -m pytest -q -p no:cacheprovider $(SANITIZE_TESTS) -m "not traps" -W ignore \
	    -rf --tb=line --durations=8 --timeout=1200 || status=1; \
	done; exit $$status

# the example kernels under memcheck, racecheck and synccheck
EXAMPLE_TESTS := tests/gpu/test_examples_gpu.py tests/gpu/test_async_examples_gpu.py
gpu-sanitize-examples:
	$(MAKE) gpu-sanitize SANITIZE_TESTS="$(EXAMPLE_TESTS)"

# The GPU suite with the cu12 flavour: a venv over the machine's packages
# (torch, cupy, pytest) holding CUDA 12's NVVM (nvidia-cuda-nvcc-cu12) and
# cuda-bindings 12, carried in .whl-cu12 (`make device-wheels-cu12` here).
# A venv, not --target: cuda.pathfinder finds NVVM in site-packages only.
CU12_VENV := /tmp/venv-cu12
# NVVM and libdevice come from the venv's wheel (found first); CUDA_HOME
# lends the machine's toolkit for what the wheels leave out (NVRTC)
CU12_PY := PYTHONPATH=$(CURDIR) PYTHONUNBUFFERED=1 $(if $(wildcard /usr/local/cuda/lib64),CUDA_HOME=/usr/local/cuda) \
  $(CU12_VENV)/bin/python
# The machine's own site-packages are appended by a .pth file too, in case
# its python3 is itself a venv (whose packages --system-site-packages misses).
$(CU12_VENV)/.installed:
	python3 -m venv --system-site-packages --without-pip $(CU12_VENV)
	site=$$($(CU12_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') && \
	python3 -c 'import sys; d = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]; print(f"import site; list(map(site.addsitedir, {d!r}))")' > $$site/device-packages.pth && \
	python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target $$site .whl-cu12/*.whl
	touch $@

gpu-test-cu12: $(CU12_VENV)/.installed
	$(CU12_PY) -c 'import cuda.bindings as b; from numba_asynccopy._forms import nvvm_release_name as r, nvvm_ptx_isa as i; print("cuda-bindings", b.__version__, "NVVM", r(), "PTX ISA", i()); assert r().startswith("12."), r()'
	$(CU12_PY) -m numba_asynccopy
	$(CU12_PY) -m pytest -ra -q -p no:cacheprovider tests/gpu --timeout=300

# Optional: nvJitLink 12 (38 MiB, in .whl-cu12-jitlink), which numba-cuda[cu12] users have;
# numba-cuda then links (and assembles the PTX) with it instead of the driver.
gpu-cu12-jitlink: $(CU12_VENV)/.installed
	python3 -m pip install -q --no-index --no-deps --no-compile --upgrade \
	  --target $$($(CU12_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') \
	  .whl-cu12-jitlink/*.whl
	$(CU12_PY) -c 'from numba.cuda.cudadrv.driver import _have_nvjitlink as h; print("nvJitLink:", h()); assert h()'

# Benchmarks: one table, plus JSON and PNG under $(BENCH_OUT).
BENCH_OUT ?= bench-results
.PHONY: bench bench-quick
bench: /tmp/site/.installed
	$(DEVICE_PY) -m numba_asynccopy.bench --out $(BENCH_OUT) $(BENCH_ARGS)

bench-quick: /tmp/site/.installed
	$(DEVICE_PY) -m numba_asynccopy.bench --quick --out $(BENCH_OUT)-quick $(BENCH_ARGS)

# On any machine: fetch the wheels a GPU machine with a newer numpy lacks (numpy < 2.5).
device-wheels:
	$(PYTHON) -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
	  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
	  -d .whl "numpy==2.4.*"

# On any machine: the CUDA 12 wheels a GPU machine needs for the cu12 flavour
# (NVVM and ptxas 12.9, cuda-bindings 12) plus numpy < 2.5: 62 MiB.  Left out
# (a GPU machine with a CUDA toolkit has them, or does not need them):
# nvidia-cuda-nvrtc-cu12 (85 MiB, C++ sources only), nvidia-nvjitlink-cu12
# (38 MiB: without it numba-cuda links with the driver, which driver 580
# does for PTX 8.8), nvidia-cuda-runtime-cu12, nvidia-cuda-cccl-cu12.
device-wheels-cu12:
	$(PYTHON) -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
	  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
	  --platform manylinux_2_12_x86_64 -d .whl-cu12 \
	  "numpy==2.4.*" "cuda-bindings==12.9.*" "nvidia-cuda-nvcc-cu12==12.9.*"
	du -sh .whl-cu12
	$(PYTHON) -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
	  --implementation cp --platform manylinux_2_12_x86_64 -d .whl-cu12-jitlink \
	  "nvidia-nvjitlink-cu12==12.9.*"

clean:
	rm -rf .venv $(VENV_CU12) build *.egg-info
