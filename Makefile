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

.PHONY: all deps test-deps run tour test test-release test-asan bench install clean fuzz-deps fuzz-build fuzz test-fuzz

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
	$(PYTHON) bench/bench_zoo.py --build $(BUILD) --model deepseek-v3 --repeats 50 --hf-repeats 1 --python-repeats 1
	$(PYTHON) bench/bench_zoo.py --build $(BUILD) --model kimi-k2 --repeats 50 --hf-repeats 1 --python-repeats 1
	$(PYTHON) bench/bench_safetensors.py --bin $(BUILD)/bench_safetensors
	$(PYTHON) bench/bench_memory.py --bin $(BUILD)/mtk
	$(PYTHON) bench/bench_place.py --bin $(BUILD)/mtk
	$(PYTHON) bench/bench_mpi_load.py --bin $(BUILD)/mtk
	$(PYTHON) bench/bench_run.py --bin $(BUILD)/mtk
	$(PYTHON) bench/bench_stream.py --bin $(BUILD)/mtk --dir $(BUILD)

# libFuzzer targets, built with clang (installed by
# `scripts/install-deps.sh --fuzz`): one per parser, fuzz/fuzz_<name>.c,
# linked with the library sources it needs (FUZZ_DIRS_<name>) and run with
# its own flags and seeds (FUZZ_ARGS_<name>).
#   fuzz_st_header  a safetensors file image           (core, io)
#   fuzz_eval       an eval expression, run on meta     (core, ops, eval)
#   fuzz_config     a config.json, built on meta        (core, ops, nn, models, io, eval)
#   fuzz_max_memory mtk place's --max-memory list        (core, ops, nn, models, io, eval, plan)
# UBSan is recoverable in these builds: a run reports every site it
# reaches instead of stopping at the first (scripts/run-fuzz.sh lists them
# and fails).  `make fuzz` runs each target for FUZZ_SECONDS; `make
# test-fuzz` for FUZZ_TEST_SECONDS each (part of `make test`).  New inputs
# go to $(FUZZ_BUILD)/corpus-<name>.
FUZZ_BUILD        ?= build-fuzz
FUZZ_SECONDS      ?= 60
FUZZ_TEST_SECONDS ?= 15
FUZZ_TARGETS      := $(patsubst fuzz/fuzz_%.c,%,$(wildcard fuzz/fuzz_*.c))
FUZZ_CFLAGS := -std=c11 -g -O1 -D_GNU_SOURCE -Wall -Wextra -Werror -ffp-contract=off -Iinclude -Isrc \
    $(shell pkg-config --cflags openblas 2>/dev/null) \
    -fsanitize=fuzzer-no-link,address,undefined -fsanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_LDFLAGS := -fsanitize=fuzzer,address,undefined
FUZZ_LIBS := $(shell pkg-config --libs libcjson 2>/dev/null) -lm -pthread -ldl

FUZZ_DIRS_st_header := core ops nn models io eval
FUZZ_DIRS_eval      := core ops eval
FUZZ_DIRS_config    := core ops nn models io eval
FUZZ_DIRS_max_memory := core ops nn models io eval plan
FUZZ_ARGS_st_header := -max_len=65536 -rss_limit_mb=2048 -dict=fuzz/safetensors.dict tests/io/corpus
FUZZ_ARGS_eval      := -max_len=4096 -rss_limit_mb=2048 -timeout=10 \
    $(patsubst %,-dict=%,$(wildcard fuzz/eval.dict)) $(FUZZ_BUILD)/seeds-eval
FUZZ_ARGS_config    := -max_len=16384 -rss_limit_mb=2048 -timeout=10 \
    $(patsubst %,-dict=%,$(wildcard fuzz/config.dict)) $(wildcard tests/models/corpus)
FUZZ_ARGS_max_memory := -max_len=512 -rss_limit_mb=2048 -timeout=10 -dict=fuzz/max_memory.dict

# one object per library source, shared by the targets (a target with no
# FUZZ_DIRS_<name> gets every layer below the CLI)
fuzz_objects = $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,\
    $(foreach d,$(or $(FUZZ_DIRS_$(1)),core ops eval nn models io),$(wildcard src/$(d)/*.c)))

# (objects are kept: make would delete them as intermediate files)
.PRECIOUS: $(FUZZ_BUILD)/obj/%.o
$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

-include $(shell find $(FUZZ_BUILD)/obj -name '*.d' 2>/dev/null)

.SECONDEXPANSION:
$(FUZZ_BUILD)/fuzz_%: $(FUZZ_BUILD)/obj/fuzz/fuzz_%.o $$(call fuzz_objects,$$*)
	clang $(FUZZ_LDFLAGS) $^ $(FUZZ_LIBS) -o $@

# the eval target's seeds: one expression of tests/oracle/cases.txt a file
$(FUZZ_BUILD)/seeds-eval: tests/oracle/cases.txt
	@rm -rf $@ && mkdir -p $@
	split -l 1 -a 4 $< $@/case-

fuzz-build: fuzz-deps
	@$(MAKE) --no-print-directory $(FUZZ_BUILD)/seeds-eval $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)

fuzz-deps:
	@scripts/install-deps.sh --fuzz

# every target runs, even after one fails; the status says whether any did
fuzz: fuzz-build
	@failed=""; \
	$(foreach t,$(FUZZ_TARGETS),scripts/run-fuzz.sh $(FUZZ_BUILD) $(t) $(FUZZ_SECONDS) $(FUZZ_ARGS_$(t)) \
	    || failed="$$failed $(t)";) \
	if [ -n "$$failed" ]; then echo "fuzz: found something in:$$failed" >&2; exit 1; fi

test-fuzz:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(FUZZ_TEST_SECONDS)

install: all
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
