# ptqkit: `make demo` and `make test` work on a fresh Debian 12 machine (they install what they need).
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc)
TESTDATA   ?= $(abspath $(BUILD))/testdata
CMAKE_ARGS ?=
# Ninja when installed (install-deps.sh installs it): it schedules the 2-core CI build better.
GENERATOR  ?= $(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo "Unix Makefiles")

.PHONY: deps build demo test test-asan fuzz-smoke bench testdata clean

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=Release -DPTQ_TEST_DATA_DIR=$(TESTDATA) $(CMAKE_ARGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

testdata: deps
	@bash scripts/make-testdata.sh $(TESTDATA)

demo: build
	@bash scripts/demo.sh $(BUILD)

test: build testdata
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900

# The whole test suite again under AddressSanitizer + UBSan (run by .ci/run). -O1 with line
# tables only: asserts stay on, reports keep file:line, and the build is much cheaper than -O2 -g.
test-asan: deps testdata
	cmake -S . -B $(ASAN_BUILD) -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
	  -DPTQ_SANITIZE=ON -DPTQ_BENCH=OFF -DPTQ_TEST_DATA_DIR=$(TESTDATA) $(CMAKE_ARGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) --timeout 1800 -LE no_asan

# A short libFuzzer run of the model reader from its seed corpus.
fuzz-smoke: deps
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G "$(GENERATOR)" -DPTQ_FUZZ=ON -DPTQ_TESTS=OFF -DPTQ_BENCH=OFF \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_model_reader
	bash scripts/fuzz-smoke.sh $(FUZZ_BUILD)

bench: build testdata
	@bash bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
