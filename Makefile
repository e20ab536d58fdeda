# mtk — the two commands of the README:
#   make run    installs what is missing, builds, and runs the main job
#   make test   installs what is missing, builds, and runs every test
#               (C unit tests, PyTorch oracle tests, then all again under
#               AddressSanitizer + UndefinedBehaviorSanitizer)
# `make` alone builds build/mtk and libmtk.

BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
PYTHON     ?= python3
PREFIX     ?= /usr/local

.PHONY: all deps test-deps run test test-release test-asan bench install clean

all: $(BUILD)/mtk

$(BUILD)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null

$(BUILD)/mtk: $(BUILD)/Makefile FORCE
	cmake --build $(BUILD) -j$(JOBS)

FORCE:

deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-deps.sh --test

run: deps
	@$(MAKE) --no-print-directory all
	@scripts/tour.sh $(BUILD)/mtk

test: test-deps
	@$(MAKE) --no-print-directory test-release
	@$(MAKE) --no-print-directory test-asan

test-release: all
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)
	MTK_BIN=$(abspath $(BUILD)/mtk) scripts/run-pytest.sh $(PYTHON)

test-asan:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DMTK_SANITIZE=ON -DMTK_BUILD_BENCH=OFF >/dev/null
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j$(JOBS)
	MTK_BIN=$(abspath $(ASAN_BUILD)/mtk) ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    scripts/run-pytest.sh $(PYTHON)

bench: all
	$(PYTHON) bench/run.py --build $(BUILD)

install: all
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
