# The two commands a user needs: `make demo` and `make test`. Both install
# missing Debian packages first (scripts/install-deps.sh), then build.
BUILD ?= build
JOBS ?= $(shell nproc)
MODELS ?= $(abspath ../shared/models)
# The Python the module is built for and tested with: Debian's, which has
# python3-numpy (a python3 earlier in PATH, such as pyenv's, may lack it).
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || command -v python3)

.PHONY: all deps configure build demo test bench python fuzz sanitize valgrind clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(if $(PYTHON),-DPython3_EXECUTABLE=$(PYTHON)) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The Python module (pybind11): build/python/texplan, used with PYTHONPATH.
# `pip install --no-build-isolation .` installs it as a package (docs/python.md).
python: configure
	@cmake --build $(BUILD) -j $(JOBS) --target texplan_python
	@echo "built $(BUILD)/python/texplan: PYTHONPATH=$(abspath $(BUILD))/python python3 -c 'import texplan'"

# --ignore-scripts: onnxruntime-node's install script only fetches CUDA binaries from
# nuget.org (unreachable offline); the CPU ones ship in the npm package itself.
bench: build
	@if command -v npm >/dev/null && [ ! -d bench/peers/node_modules ]; then \
	  (cd bench/peers && npm install --no-audit --no-fund --silent --ignore-scripts) || echo "onnxruntime peer not installed"; fi
	@$(BUILD)/texplan_bench --models $(MODELS) --json $(BUILD)/bench.json

# Fuzzing (fuzz/): the libFuzzer targets are built with clang, ASan and UBSan
# inside the main build (-DTEXPLAN_FUZZ=ON, when clang is installed; off for
# `make test`, whose build it would nearly double); each runs FUZZ_SECONDS,
# seeded from examples/models, $(MODELS) and ONNX's node tests, its corpus
# kept in $(BUILD)/fuzz-work. A crash stops it and names the input: fix it,
# then keep the input in fuzz/regressions/TARGET/ (make test replays them).
FUZZ_SECONDS ?= 3600
FUZZ_TARGETS ?= import shapes planner tensor
fuzz: configure
	@cmake -S . -B $(BUILD) -DTEXPLAN_FUZZ=ON >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target texplan_fuzzers
	@for t in $(FUZZ_TARGETS); do \
	  FUZZ_WORK=$(abspath $(BUILD))/fuzz-work FUZZ_MODELS=$(MODELS) fuzz/run.sh fuzz $(BUILD)/fuzz-clang $$t $(FUZZ_SECONDS) || exit 1; \
	done

# The whole suite built with AddressSanitizer + UndefinedBehaviorSanitizer
# (LeakSanitizer included: a leak fails the test) in $(SANITIZE_BUILD).
# SANITIZE_TESTS: a ctest -R regex to run only some. SANITIZE_TARGETS: build
# only these test executables (and the CLI, which tests run) instead of all;
# tests of executables never built there are skipped (one built earlier still
# runs, stale: narrow with SANITIZE_TESTS). The hostile-input suites:
#   make sanitize SANITIZE_TARGETS='test_hostile test_hostile_io test_exported' \
#     SANITIZE_TESTS='Hostile|Exported|NewerSchemas'
# Excluded: the packaging test (it links an uninstrumented example against
# the instrumented install).
SANITIZE_BUILD ?= build-asan
SANITIZE_TESTS ?=
SANITIZE_TARGETS ?=
SANITIZE_EXCLUDE ?= ^Packaging
SANITIZE_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
SANITIZE_ENV := ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1 \
  LSAN_OPTIONS=suppressions=$(abspath tests/lsan-pocl.supp):use_tls=0:print_suppressions=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
sanitize: deps
	@cmake -S . -B $(SANITIZE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g" \
	  "-DCMAKE_CXX_FLAGS=$(SANITIZE_FLAGS)" "-DCMAKE_EXE_LINKER_FLAGS=$(SANITIZE_FLAGS)" \
	  "-DCMAKE_SHARED_LINKER_FLAGS=$(SANITIZE_FLAGS)" -DTEXPLAN_FUZZ=OFF -DTEXPLAN_BENCH=OFF \
	  -DCMAKE_DISABLE_FIND_PACKAGE_pybind11=ON >/dev/null
	@cmake --build $(SANITIZE_BUILD) -j $(JOBS) $(if $(SANITIZE_TARGETS),--target texplan_cli $(SANITIZE_TARGETS))
	@cd $(SANITIZE_BUILD) && $(SANITIZE_ENV) ctest --output-on-failure -j $(JOBS) \
	  -E '$(SANITIZE_EXCLUDE)$(if $(SANITIZE_TARGETS),|_NOT_BUILT$$)' \
	  $(if $(SANITIZE_TESTS),-R '$(SANITIZE_TESTS)')

# The CPU path (import, plan, reference executor) under valgrind's memcheck.
valgrind: build
	@valgrind --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
	  --error-exitcode=9 $(BUILD)/texplan run examples/models/tiny_cnn --device cpu --check

clean:
	rm -rf $(BUILD)
