# The two commands a user needs: `make demo` and `make test`. Both install
# missing Debian packages first (scripts/install-deps.sh), then build.
BUILD ?= build
JOBS ?= $(shell nproc)
MODELS ?= $(abspath ../shared/models)

.PHONY: all deps configure build demo test bench python clean

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The Python module (pybind11): build/python/texplan, used with PYTHONPATH.
python: configure
	@cmake --build $(BUILD) -j $(JOBS) --target texplan_python
	@echo "built $(BUILD)/python/texplan: PYTHONPATH=$(abspath $(BUILD))/python python3 -c 'import texplan'"

bench: build
	@if command -v npm >/dev/null && [ ! -d bench/peers/node_modules ]; then \
	  (cd bench/peers && npm install --no-audit --no-fund --silent) || echo "onnxruntime peer not installed"; fi
	@$(BUILD)/texplan_bench --models $(MODELS) --json $(BUILD)/bench.json

clean:
	rm -rf $(BUILD)
