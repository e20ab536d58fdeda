# mtk — the two commands of the README:
#   make run    installs what is missing, builds, and runs the main job:
#               mtk summary llama-3-8b --input 1x2048 (make tour: the tour)
#   make test   installs what is missing, builds, and runs every test
#               (C unit tests, PyTorch oracle tests, then all again under
#               AddressSanitizer + UndefinedBehaviorSanitizer)
# `make` alone builds build/mtk and libmtk.

BUILD      ?= build
ASAN_BUILD ?= build-asan
# the sanitizer run repeats the oracle for memory errors, not for coverage:
# 5,000 random expressions per device there (the release run draws 20,000)
ASAN_ORACLE_CASES ?= 5000
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
PYTHON     ?= python3
PREFIX     ?= /usr/local

.PHONY: all deps test-deps run tour test test-release test-asan bench install clean fuzz-deps fuzz test-fuzz

all: $(BUILD)/mtk

$(BUILD)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null

$(BUILD)/mtk: $(BUILD)/Makefile FORCE
	cmake --build $(BUILD) -j$(JOBS)

FORCE:

deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-deps.sh --test

run: deps
	@$(MAKE) --no-print-directory all
	$(BUILD)/mtk summary llama-3-8b --input 1x2048

tour: deps
	@$(MAKE) --no-print-directory all
	@scripts/tour.sh $(BUILD)/mtk

test: test-deps
	@$(MAKE) --no-print-directory test-release
	@$(MAKE) --no-print-directory test-asan
	@$(MAKE) --no-print-directory test-fuzz

test-release: all
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)
	MTK_BIN=$(abspath $(BUILD)/mtk) scripts/run-pytest.sh $(PYTHON)

test-asan: all
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DMTK_SANITIZE=ON -DMTK_BUILD_BENCH=OFF >/dev/null
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j$(JOBS)
	MTK_BIN=$(abspath $(ASAN_BUILD)/mtk) MTK_LIB=$(abspath $(BUILD)/libmtk.so) MTK_ORACLE_CASES=$(ASAN_ORACLE_CASES) ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    scripts/run-pytest.sh $(PYTHON)

bench: all
	$(PYTHON) bench/run.py --bin $(BUILD)/bench_meta_ops
	$(PYTHON) bench/bench_nn.py --bin $(BUILD)/bench_nn
	$(PYTHON) bench/bench_zoo.py --build $(BUILD)
	$(PYTHON) bench/bench_safetensors.py --bin $(BUILD)/bench_safetensors

# libFuzzer target for the safetensors header parser, built with clang
# (installed by `scripts/install-deps.sh --fuzz`) from the core and io
# sources.  `make fuzz` runs it for FUZZ_SECONDS; `make test-fuzz` for 10 s.
# New inputs go to $(FUZZ_BUILD)/corpus; tests/io/corpus seeds it.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGET  := $(FUZZ_BUILD)/fuzz_st_header
FUZZ_SOURCES := fuzz/fuzz_st_header.c $(wildcard src/core/*.c) $(wildcard src/io/*.c)

fuzz-deps:
	@scripts/install-deps.sh --fuzz

$(FUZZ_TARGET): $(FUZZ_SOURCES) $(wildcard include/mtk/*.h src/core/*.h src/io/*.h)
	@mkdir -p $(FUZZ_BUILD)
	clang -std=c11 -g -O1 -D_GNU_SOURCE -Wall -Wextra -Werror -Iinclude -Isrc \
	    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	    $(FUZZ_SOURCES) $$(pkg-config --libs libcjson) -lm -pthread -o $@

fuzz: fuzz-deps
	@$(MAKE) --no-print-directory $(FUZZ_TARGET)
	@mkdir -p $(FUZZ_BUILD)/corpus
	$(FUZZ_TARGET) -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -rss_limit_mb=2048 \
	    -dict=fuzz/safetensors.dict -artifact_prefix=$(FUZZ_BUILD)/ -print_final_stats=1 \
	    $(FUZZ_BUILD)/corpus tests/io/corpus

test-fuzz:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=10

install: all
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
