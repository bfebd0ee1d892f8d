# ptqkit: `make demo` and `make test` work on a fresh Debian 12 machine (they install what they need).
#   make test               Release build in build/, every test (but the large zoo models on
#                           Vulkan: make test-zoo-vulkan)
#   make test SANITIZE=1    the same suite built with AddressSanitizer + UBSan in build-asan/ (CI)
#   make package            a .deb of the portable Release build
#                           (build-package/ptqkit_VERSION_ARCH.deb)
# Each target installs only its own dependency sets (scripts/deps/: build, runtime, demo, test).
SANITIZE   ?= 0
ifeq ($(SANITIZE),1)
BUILD      ?= build-asan
# -O1 without debug info: asserts stay on, reports name functions (symbolized), and the build
# costs a fraction of -O2 -g's compile time on the 2-core CI machine.
TYPE_ARGS  := -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1" \
              -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1" -DPTQ_SANITIZE=ON -DPTQ_BENCH=OFF
TEST_ENV   := ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
else
BUILD      ?= build
TYPE_ARGS  := -DCMAKE_BUILD_TYPE=Release
TEST_ENV   :=
endif
# ctest runs JOBS tests at once, each with OpenMP threads: libgomp's default spin-waiting makes
# them starve each other on a small machine (a CLI test took 17 s alone, 92 s beside another).
# Results do not depend on the wait policy.
TEST_ENV   += OMP_WAIT_POLICY=passive
FUZZ_BUILD ?= build-fuzz
PACKAGE_BUILD ?= build-package
JOBS       ?= $(shell nproc)
# Test models and ONNX backend data are generated once and shared by both builds.
TESTDATA   ?= $(abspath build)/testdata
CMAKE_ARGS ?=
# Ninja when installed (install-deps.sh installs it): it schedules the 2-core CI build better.
GENERATOR  ?= $(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo "Unix Makefiles")

.PHONY: deps build demo test test-zoo-vulkan test-asan fuzz-smoke bench bench-zoo bench-ort-int8 accuracy-zoo zoo testdata package clean

# Every set (a development machine).
deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	@bash scripts/install-deps.sh build
	cmake -S . -B $(BUILD) -G "$(GENERATOR)" $(TYPE_ARGS) -DPTQ_TEST_DATA_DIR=$(TESTDATA) $(CMAKE_ARGS)

build: $(BUILD)/CMakeCache.txt
	@bash scripts/install-deps.sh build
	cmake --build $(BUILD) -j $(JOBS)

testdata:
	@bash scripts/install-deps.sh test
	@bash scripts/make-testdata.sh $(TESTDATA)

demo: build
	@bash scripts/install-deps.sh runtime demo
	@bash scripts/demo.sh $(BUILD)

test: build testdata
	@bash scripts/install-deps.sh runtime test
	cd $(BUILD) && $(TEST_ENV) ctest --output-on-failure -j $(JOBS) --timeout 1800 -LE zoo_vulkan_large

# The zoo models `make test` leaves out of tests/zoo/zoo_vulkan_test.cpp (each on Vulkan
# --strict against the CPU, minutes under ASan on lavapipe); CI runs it after `make test`.
test-zoo-vulkan: build testdata
	@bash scripts/install-deps.sh runtime test
	cd $(BUILD) && $(TEST_ENV) ctest --output-on-failure -j $(JOBS) --timeout 1800 -L zoo_vulkan_large

# The .deb: bin/ptq, its man page, the library, headers, CMake and pkg-config files; it depends
# on the runtime set and the shared libraries ptq links. It is built portable in
# $(PACKAGE_BUILD) (-DPTQ_NATIVE=OFF: runs on any x86-64 CPU, the kernels pick AVX-512, AVX2 or
# the baseline at run time), without tests or benchmarks.
package:
	@bash scripts/install-deps.sh build
	cmake -S . -B $(PACKAGE_BUILD) -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=Release -DPTQ_NATIVE=OFF \
	  -DPTQ_TESTS=OFF -DPTQ_BENCH=OFF $(CMAKE_ARGS)
	cmake --build $(PACKAGE_BUILD) -j $(JOBS)
	cd $(PACKAGE_BUILD) && cpack -G DEB

# The whole test suite under AddressSanitizer + UBSan (what CI runs).
test-asan:
	$(MAKE) test SANITIZE=1

# A short libFuzzer run of the model reader from its seed corpus.
fuzz-smoke:
	@bash scripts/install-deps.sh build test
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G "$(GENERATOR)" -DPTQ_FUZZ=ON -DPTQ_TESTS=OFF \
	  -DPTQ_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_targets
	bash scripts/fuzz-smoke.sh $(FUZZ_BUILD)

bench: build testdata
	@bash bench/run.sh $(BUILD)

# The model zoo (scripts/export_zoo.py) is part of the test data: `make zoo` exports only what
# is missing or stale. `make bench-zoo` measures every zoo model against ONNX Runtime and
# rewrites the generated table in docs/PERF.md.
zoo: testdata

bench-zoo: build testdata
	PTQ_TEST_DATA=$(TESTDATA) /usr/bin/python3 bench/zoo.py $(BUILD) --perf-md docs/PERF.md

# FP32 against U8S8 and S8S8 INT8 under ONNX Runtime's CPU provider for the zoo's CNNs
# (docs/PERF.md): the measurement behind `--target ort --ort-ep cpu` choosing uint8.
bench-ort-int8: build testdata
	PTQ_TEST_DATA=$(TESTDATA) /usr/bin/python3 bench/ort_int8.py $(BUILD) --perf-md docs/PERF.md

# Every calibration method on every zoo model: INT8 SQNR against FP32 (docs/PERF.md).
accuracy-zoo: build testdata
	PTQ_TEST_DATA=$(TESTDATA) /usr/bin/python3 bench/accuracy.py $(BUILD) --perf-md docs/PERF.md

clean:
	rm -rf build build-asan $(FUZZ_BUILD) $(PACKAGE_BUILD)
