# gpusparse: set-up, tests, demo and benchmarks.
#
#   make demo         create .venv if needed, install, build the demo's kernels (warmup --portable),
#                     run python -m gpusparse.demo
#   make test         kernels-check, wheel-check, pytest, emulation-test, ..., docs (in .venv)
#   make kernels-check  compile every cuda_kernels/*.cu with nvcc (warnings as errors), print each
#                     kernel's ptxas resources and occupancy, check tools/kernel_budgets.json
#                     (skipped without nvcc)
#   make import-check  the largest import loop among gpusparse's modules, at most 10 (tools/import_cycles.py)
#   make emulation-test  the CUDA tests on the CPU execution harness (no GPU needed)
#   make emulation-memcheck  the same kernel tests with AddressSanitizer
#   make gpu-cost     launches, syncs and device memory of every operation on the emulated
#                     device, checked against benchmarks/gpu_cost_budgets.json (about 30 s)
#   make fuzz         the fuzzers of tests/fuzz with a long budget (FUZZ_PROFILE=fuzz), statistics
#   make wheel-check  sdist -> wheel from the sdist -> fresh venv -> check the install
#   make pytest       pytest only (PYTEST_ARGS="-m 'not slow'" etc.)
#   make bench        CPU/GPU benchmarks into benchmarks/results/
#   make gpu-report   GPU report with the system python3 (no venv, no network): the CUDA tests
#                     and the CUDA benchmarks in one command of at most 540 s (GPU_REPORT_ARGS="--stages ...")
#   make gpu-report-emulate  the GPU report's whole plan on the emulated device at tiny sizes (CI)
#   make docs         the documentation site (Sphinx, warnings as errors) into build/docs/html,
#                     then the pages' examples with the doctest builder
#   make clean        remove build outputs and caches; make distclean also removes .venv
#
# Variables: PYTHON (the interpreter that creates the venvs), VENV, EXTRAS
# (extras installed into .venv, e.g. EXTRAS=test,cuda12 on a CUDA machine),
# PYTEST_ARGS, DEMO_ARGS (e.g. DEMO_ARGS="--scale 16"), BENCH_ARGS, GPU_REPORT_ARGS.

PYTHON      ?= python3
VENV        ?= .venv
EXTRAS      ?= test
PYTEST_ARGS ?=
FUZZ_PROFILE ?= fuzz
DEMO_ARGS   ?=
BENCH_ARGS  ?=
GPU_REPORT_ARGS ?=
GPU_COST_ARGS ?=

comma    := ,
BIN      := $(VENV)/bin
PKGCHECK := build/pkgcheck
# One stamp per set of extras, so that `make bench` adds its extras to the venv.
stamp     = $(VENV)/.installed-$(subst $(comma),-,$(1))

.DEFAULT_GOAL := help
.PHONY: help venv demo test kernels-check import-check wheel-check pytest emulation-test emulation-memcheck fuzz bench docs \
	gpu-report gpu-report-emulate gpu-cost clean distclean

help:
	@sed -n '/^#/!q; s/^# \{0,1\}//p' Makefile

# The venv holds an editable install, so tests and the demo run the source tree.
$(VENV)/.installed-%: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --progress-bar off -e ".[$(subst -,$(comma),$*)]"
	touch $@

venv: $(call stamp,$(EXTRAS))

# The demo's own extra: the library and SciPy, without the test extra's torch and JAX. Setting up
# also builds the prebuilt kernel cache of what the demo runs -- building, coalescing and converting
# float32 arrays (python -m gpusparse warmup --portable: compiled once for this CPU architecture,
# loaded by every later process); a later run finds it current and only loads it, or rebuilds it
# after the kernel sources changed.
demo: $(call stamp,demo)
	$(BIN)/python -m gpusparse warmup --portable --dtypes float32 --families construct
	$(BIN)/python -m gpusparse.demo $(DEMO_ARGS)

test: kernels-check import-check wheel-check pytest emulation-test gpu-cost gpu-report-emulate docs

kernels-check:
	bash tools/check_cuda_kernels.sh

# The largest set of gpusparse's modules importing each other in a loop: at most 10.
import-check:
	$(PYTHON) tools/import_cycles.py --max 10

# Build the sdist, then the wheel from the sdist (python -m build does both),
# install the wheel with its core dependencies into a throwaway venv and check
# from outside the tree that every module and kernel source arrived.
wheel-check: $(call stamp,$(EXTRAS))
	rm -rf $(PKGCHECK)
	$(BIN)/python -m build --quiet --outdir $(PKGCHECK)/dist .
	$(PYTHON) -m venv $(PKGCHECK)/venv
	$(PKGCHECK)/venv/bin/python -m pip install --quiet $(PKGCHECK)/dist/gpusparse-*.whl
	cd $(PKGCHECK) && venv/bin/python -I "$(CURDIR)/tools/check_wheel.py" --source "$(CURDIR)"

pytest: $(call stamp,$(EXTRAS))
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The CUDA parametrisations (marker gpu) on the emulated device: every
# primitive's tests, and the operations whose CUDA paths reach the kernels.
EMULATED_TESTS ?= tests/kernels tests/containers tests/ops tests/io tests/graph tests/array_api \
	tests/autograd tests/dask tests/test_options.py tests/test_streams.py tests/test_memory_rule.py \
	tests/fuzz/test_fuzz_threads.py tests/fuzz/test_fuzz_index_dtypes.py

emulation-test: $(call stamp,$(EXTRAS))
	GPUSPARSE_CUDA_EMULATION=1 $(BIN)/python -m pytest -m gpu $(EMULATED_TESTS) $(PYTEST_ARGS)

emulation-memcheck: $(call stamp,$(EXTRAS))
	LD_PRELOAD="$$($${CXX:-g++} -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0 \
		GPUSPARSE_CUDA_EMULATION=asan $(BIN)/python -m pytest -m gpu tests/kernels $(PYTEST_ARGS)

# Stateful differential fuzzing and malformed-input fuzzing with the long
# Hypothesis profile; prints Hypothesis' statistics and a summary line
# (examples tried, failures found). The CUDA parametrisation runs where a GPU
# is usable, e.g. `GPUSPARSE_CUDA_EMULATION=1 make fuzz`.
fuzz: $(call stamp,$(EXTRAS))
	GPUSPARSE_HYPOTHESIS_PROFILE=$(FUZZ_PROFILE) $(BIN)/python -m pytest tests/fuzz \
		--hypothesis-show-statistics -p no:cacheprovider $(PYTEST_ARGS)

bench: $(call stamp,bench)
	MKL_RT="$${MKL_RT:-$$(ls $(abspath $(VENV))/lib/libmkl_rt.so* 2>/dev/null | head -n 1)}" \
		$(BIN)/python -m benchmarks.run $(BENCH_ARGS)

# Tests (CUDA parametrisations only, threads capped per worker, at most 250 s) then the CUDA
# benchmarks, one process per module in shares of the rest, within --budget 540 s; the stages,
# sizes and limits are documented in benchmarks/gpu_report/__init__.py. Results reach $OUT after every
# benchmark module and every 15 s of the tests.
gpu-report:
	PYTHONPATH=. python3 -m benchmarks.gpu_report $(GPU_REPORT_ARGS)

# The whole GPU report on the emulated CUDA device at tiny sizes (about 1.5 min on 2 cores);
# fails unless every stage and every benchmark module reported.
gpu-report-emulate: $(call stamp,$(EXTRAS))
	$(BIN)/python -m benchmarks.gpu_report --emulate $(GPU_REPORT_ARGS)

# Launches, syncs and device memory of every public operation on the emulated
# CUDA device, compared with the reviewed budgets; run after emulation-test,
# whose kernels it reuses from the compile cache.
gpu-cost: $(call stamp,$(EXTRAS))
	GPUSPARSE_CUDA_EMULATION=1 $(BIN)/python -m benchmarks.gpu_cost --check $(GPU_COST_ARGS)

# The documentation site: HTML into build/docs/html (open build/docs/html/index.html), then the
# doctest builder runs the pages' examples. Warnings (docstring markup included) are errors.
DOCS_EXTRAS := $(if $(filter docs,$(subst $(comma), ,$(EXTRAS))),$(EXTRAS),$(EXTRAS),docs)
docs: $(call stamp,$(DOCS_EXTRAS))
	$(BIN)/sphinx-build -W --keep-going -b html docs build/docs/html
	$(BIN)/sphinx-build -W --keep-going -b doctest docs build/docs/doctest

clean:
	rm -rf build dist *.egg-info .pytest_cache .hypothesis
	find . -path ./$(VENV) -prune -o \( -name __pycache__ -o -name '*.nbi' -o -name '*.nbc' \) -print \
		| xargs rm -rf

distclean: clean
	rm -rf $(VENV)
