# groundtruth — plain GNU make, objects out of tree under $(BUILD), quiet unless V=1.
#
#   make              everything this machine can build
#   make record pipeline   the GPU-box subset: gcc + libc (+ CUDA when found), no libdw/Cairo
#   make check        dependencies (as root), build, every test; ends with "N passed, N failed"
#   make demo         dependencies, build, record the reference pipeline, report + flame graph
#   make check-asan   the same suite built with ASan + UBSan (build/asan), leaks checked
#   make fuzz         each libFuzzer target for FUZZ_SECONDS (clang); fuzz-smoke: a few seconds
#   make install PREFIX=/usr/local

BUILD   ?= build
PREFIX  ?= /usr/local
CC      ?= gcc
CUDA_HOME ?= /usr/local/cuda
NVCC    ?= $(CUDA_HOME)/bin/nvcc
VERSION := 0.1.0

OPT      ?= -O2 -g
WARN     := -std=gnu11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
ifeq ($(WERROR),1)
WARN     += -Werror
endif
SAN      ?=
CFLAGS   += $(OPT) $(WARN) $(SAN) -fPIC -fno-omit-frame-pointer -pthread
CPPFLAGS += -Ilib -Ikernels -D_GNU_SOURCE -DGT_VERSION='"$(VERSION)"' -MMD -MP
LDFLAGS  += $(SAN) -pthread
# -ldl: lib/ loads libzstd at run time (in libc itself from glibc 2.34; a stub there)
LDLIBS   += -lm -ldl

ifeq ($(V),1)
Q :=
else
Q := @
endif

# CUDA is optional: found when nvcc exists (CUDA_HOME overrides).
HAVE_CUDA := $(shell test -x $(NVCC) && echo 1)
NVCCFLAGS ?= -O2 -g -lineinfo -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -Xcompiler -fPIC

# libdw/libelf and Cairo only for the analysis side, through pkg-config.
DW_CFLAGS    = $(shell pkg-config --cflags libdw libelf 2>/dev/null)
DW_LIBS      = $(shell pkg-config --libs libdw libelf 2>/dev/null || echo -ldw -lelf) -lstdc++
CAIRO_CFLAGS = $(shell pkg-config --cflags cairo 2>/dev/null)
CAIRO_LIBS   = $(shell pkg-config --libs cairo 2>/dev/null || echo -lcairo)

OBJ := $(BUILD)/obj
BIN := $(BUILD)/bin
LIBDIR := $(BUILD)/lib

# ---- sources by module (each directory is one program; main.c holds main) ----
LIB_SRC  := $(wildcard lib/*.c)
# record/cupti_*.c is the CUDA agent (libgtcupti.so); everything else is gt-record.
REC_SRC  := $(filter-out record/cupti_%.c,$(wildcard record/*.c))
AGENT_SRC := $(wildcard record/cupti_*.c)
ANA_SRC  := $(wildcard analyze/*.c)
REN_SRC  := $(wildcard render/*.c)
PL_SRC   := $(wildcard pipeline/*.c)
KER_SRC  := $(wildcard kernels/*.c)
KER_CU   := $(wildcard kernels/*.cu)

objs = $(patsubst %.c,$(OBJ)/%.o,$(1))

LIBGTT   := $(LIBDIR)/libgtt.a
LIBREC   := $(LIBDIR)/librec.a
LIBANA   := $(LIBDIR)/libana.a
LIBREN   := $(LIBDIR)/libren.a
LIBPL    := $(LIBDIR)/libpl.a

GT_RECORD   := $(BIN)/gt-record
GT_ANALYZE  := $(BIN)/gt-analyze
GT_RENDER   := $(BIN)/gt-render
GT_PIPELINE := $(BIN)/gt-pipeline
AGENT       := $(LIBDIR)/libgtcupti.so
PL_SO       := $(LIBDIR)/libgtpipeline.so

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all record analyze render pipeline check check-asan demo deps install clean bench bench-tools fuzz fuzz-smoke fuzzers tests help

all: record pipeline analyze render

help:
	@sed -n '/^# groundtruth/,/^$$/s/^#   //p' $(firstword $(MAKEFILE_LIST))

record: $(GT_RECORD) $(if $(HAVE_CUDA),$(if $(AGENT_SRC),$(AGENT)))
analyze: $(GT_ANALYZE)
render: $(GT_RENDER)
pipeline: $(GT_PIPELINE) $(PL_SO)

# ---- compile rules ----
$(OBJ)/analyze/%.o: CPPFLAGS += $(DW_CFLAGS)
$(OBJ)/render/%.o: CPPFLAGS += $(CAIRO_CFLAGS) -Ianalyze
$(OBJ)/record/cupti_%.o: CPPFLAGS += -I$(CUDA_HOME)/include -I$(CUDA_HOME)/extras/CUPTI/include
ifeq ($(HAVE_CUDA),1)
$(OBJ)/pipeline/%.o $(OBJ)/kernels/%.o: CPPFLAGS += -DGT_HAVE_CUDA=1 -I$(CUDA_HOME)/include
endif

$(OBJ)/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(OBJ)/%.cu.o: %.cu
	@mkdir -p $(@D)
	@$(if $(Q),echo "  NVCC    $<")
	$(Q)$(NVCC) $(NVCCFLAGS) -Ilib -Ikernels -MMD -MP -MF $(@:.o=.d) -c -o $@ $<

# ---- archives (tests link the modules through these) ----
$(LIBGTT): $(call objs,$(LIB_SRC))
$(LIBREC): $(call objs,$(filter-out record/main.c,$(REC_SRC)))
$(LIBANA): $(call objs,$(filter-out analyze/main.c,$(ANA_SRC)))
$(LIBREN): $(call objs,$(filter-out render/main.c,$(REN_SRC)))
$(LIBPL):  $(call objs,$(filter-out pipeline/main.c,$(PL_SRC)) $(KER_SRC)) \
           $(if $(HAVE_CUDA),$(patsubst %.cu,$(OBJ)/%.cu.o,$(KER_CU)))
$(LIBDIR)/%.a:
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

# ---- programs ----
ifeq ($(HAVE_CUDA),1)
CUDA_LIBS = -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas -lcudart -lstdc++
endif

# -ldl: --dump demangles C++ names through a dlopen'ed libstdc++ (glibc < 2.34 keeps dlopen there)
$(GT_RECORD): $(OBJ)/record/main.o $(LIBREC) $(LIBGTT)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) -ldl

$(GT_ANALYZE): $(OBJ)/analyze/main.o $(LIBANA) $(LIBGTT)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(DW_LIBS) -lz $(LDLIBS)

$(GT_RENDER): $(OBJ)/render/main.o $(LIBREN) $(LIBANA) $(LIBGTT)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CAIRO_LIBS) $(DW_LIBS) -lz $(LDLIBS)

$(GT_PIPELINE): $(OBJ)/pipeline/main.o $(LIBPL) $(LIBGTT)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CUDA_LIBS) $(LDLIBS) -ldl

# The pipeline as a shared library for pipeline/driver.py (ctypes).
$(PL_SO): $(LIBPL) $(LIBGTT)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -shared -o $@ -Wl,--whole-archive $(LIBPL) -Wl,--no-whole-archive $(LIBGTT) $(CUDA_LIBS) $(LDLIBS) -ldl

# The agent reads its own Python frames with the recorder's CPython tables (pyoffsets.c, procmem.c).
$(AGENT): $(call objs,$(AGENT_SRC) record/pyoffsets.c record/procmem.c) $(LIBGTT) record/libgtcupti.map
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -shared -o $@ $(filter %.o %.a,$^) -Wl,--version-script=record/libgtcupti.map \
	  -L$(CUDA_HOME)/extras/CUPTI/lib64 -L$(CUDA_HOME)/lib64 \
	  -Wl,-rpath,$(CUDA_HOME)/extras/CUPTI/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -Wl,-Bsymbolic -lcupti -ldl $(LDLIBS)

# ---- tests ----
# tests/unit/test_NAME.c -> $(BUILD)/tests/test_NAME, and tests/fuzz/fuzz_NAME.c ->
# build/fuzz/fuzz/fuzz_NAME (its replay test is test_fuzz_NAME). Each is compiled and linked
# with lib/ and the modules it names below, nothing more: a recorder test builds where there
# is no libdw or Cairo (the GPU box), and only analysis tests see libdw's headers. A new test
# that uses analyze/, render/ (which brings analyze/), record/ or pipeline/ goes in its list;
# UNIT_DW is for a test outside analyze/ that checks its results against libdw itself (it does
# not build on the GPU box).
UNIT_ANA := bounds clockfit counter_sum demangle diff dwfl_batch export fold gpu_golden gpu_report gpu_stream import_perf job_views \
            launch launch_load merge model_load python_merge sample_stream split_load window \
            textin unwind fuzz_analyze fuzz_fold_parse fuzz_import_perf
UNIT_ANA += gpu_queue
UNIT_ANA += load_pipe
UNIT_ANA += swcover
UNIT_REN := bounds render_flame render_timeline svg_escape fuzz_render
UNIT_REC := counters tracestop gpu_merge pyoffsets pyreader pysnap rec_archive rec_capture rec_elf rec_trace rec_tree rec_unwind top swgate \
            fuzz_pyreader fuzz_elf fuzz_unwind
UNIT_PL  := kernels
UNIT_DW  := rec_archive
# the modules of test or fuzz target $(1) (NAME or fuzz_NAME), in link order
test_mods = $(if $(filter $(1),$(UNIT_REN)),ren) $(if $(filter $(1),$(UNIT_ANA) $(UNIT_REN)),ana) \
            $(if $(filter $(1),$(UNIT_REC)),rec) $(if $(filter $(1),$(UNIT_PL)),pl) \
            $(if $(filter $(1),$(UNIT_DW)),dw)
MOD_ARCH_ren := $(LIBREN)
MOD_ARCH_ana := $(LIBANA)
MOD_ARCH_rec := $(LIBREC)
MOD_ARCH_pl  := $(LIBPL)
MOD_ARCH_dw  :=
MOD_CPP_ren   = $(CAIRO_CFLAGS) -iquote render
MOD_CPP_ana   = $(DW_CFLAGS) -iquote analyze
MOD_CPP_rec   = -iquote record
MOD_CPP_pl    = -iquote pipeline
MOD_CPP_dw    = $(DW_CFLAGS)
MOD_LIBS_ren  = $(CAIRO_LIBS)
MOD_LIBS_ana  = $(DW_LIBS) -lz
MOD_LIBS_rec  =
MOD_LIBS_pl   = $(CUDA_LIBS) -ldl
MOD_LIBS_dw   = $(DW_LIBS)
# libraries a test itself calls, beyond its modules' (by program name)
LIBS_test_top := -lz

UNIT_SRC   := $(wildcard tests/unit/test_*.c)
UNIT_NAMES := $(patsubst tests/unit/test_%.c,%,$(UNIT_SRC))
UNIT_BINS  := $(patsubst %,$(BUILD)/tests/test_%,$(UNIT_NAMES))
TEST_HELPERS := $(wildcard tests/progs/*.c)
TEST_PROGS := $(patsubst tests/progs/%.c,$(BUILD)/tests/progs/%,$(TEST_HELPERS))

# $(1): object, $(2): program, $(3): module list, $(4): extra link flags
define test_rule
$(1): CPPFLAGS += $(foreach m,$(3),$$(MOD_CPP_$(m)))
$(2): $(1) $(foreach m,$(3),$(MOD_ARCH_$(m))) $(LIBGTT)
	@mkdir -p $$(@D)
	@$$(if $$(Q),echo "  LD      $$@")
	$$(Q)$$(CC) $$(LDFLAGS) $(4) -o $$@ $$^ $(foreach m,$(3),$$(MOD_LIBS_$(m))) $$(LIBS_$(notdir $(2))) $$(LDLIBS)
endef
$(foreach t,$(UNIT_NAMES),$(eval $(call test_rule,$(OBJ)/tests/unit/test_$(t).o,$(BUILD)/tests/test_$(t),$(call test_mods,$(t)))))

# Test programs (targets to be profiled). Flags per program come from a
# "// build: FLAGS" first line, e.g. "// build: -O2 -fomit-frame-pointer".
$(BUILD)/tests/progs/%: tests/progs/%.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) -std=gnu11 -g -pthread $$(sed -n '1s|^// build: ||p' $<) -o $@ $< -lm -lz

tests: all $(UNIT_BINS) $(TEST_PROGS) bench-tools

# ---- benchmark tools: bench/NAME.c -> $(BUILD)/bench/NAME, on lib/ alone (built with the
# tests, so that they keep compiling) ----
# except BENCH_REC, which measure record/ from the inside (linked with it as gt-record is)
BENCH_SRC  := $(wildcard bench/*.c)
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
BENCH_REC  := pyreader_cost
$(BUILD)/bench/%: $(OBJ)/bench/%.o $(LIBGTT)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(foreach b,$(BENCH_REC),$(eval $(OBJ)/bench/$(b).o: CPPFLAGS += -iquote record))
$(patsubst %,$(BUILD)/bench/%,$(BENCH_REC)): $(BUILD)/bench/%: $(OBJ)/bench/%.o $(LIBREC) $(LIBGTT)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) -ldl

bench-tools: $(BENCH_BINS)

check: deps
	$(Q)$(MAKE) --no-print-directory tests
	$(Q)BUILD=$(BUILD) tests/run.sh

# Everything built with ASan+UBSan (gcc) in build/asan, then the whole suite with leak checks.
# The libraries that are loaded into programs we did not build (libgtpipeline.so into stock
# Python through ctypes, libgtcupti.so into CUDA programs) cannot carry an ASan runtime: they
# come from a plain build (build/asan-plain). GT_SAN tells tests that compile against our
# archives which flags to link with.
ASAN_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
ASAN_ENV := GT_SAN="$(ASAN_SAN)" ASAN_OPTIONS=detect_leaks=1 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 UBSAN_OPTIONS=print_stacktrace=1
check-asan: deps
	$(Q)$(MAKE) --no-print-directory BUILD=build/asan SAN="$(ASAN_SAN)" OPT="-O1 -g" tests
	$(Q)$(MAKE) --no-print-directory BUILD=build/asan-plain pipeline record
	$(Q)for f in libgtpipeline.so libgtcupti.so; do \
		if [ -f build/asan-plain/lib/$$f ]; then cp build/asan-plain/lib/$$f build/asan/lib/$$f; fi; done
	$(Q)BUILD=build/asan $(ASAN_ENV) tests/run.sh

# ---- fuzzing: clang libFuzzer + ASan/UBSan, everything in build/fuzz ----
# tests/fuzz/fuzz_NAME.c -> build/fuzz/fuzz/fuzz_NAME. `make fuzz` runs each target for
# FUZZ_SECONDS (default 60); `make fuzz-smoke` a few seconds each from the seeds alone (CI).
# tests/fuzz/run.sh keeps a growing corpus per target in build/fuzz/corpus/ (not for smoke runs)
# and crashes in build/fuzz/crashes/.
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 5
FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))
FUZZ_MAKE  = $(MAKE) --no-print-directory BUILD=build/fuzz CC=clang OPT="-O1 -g" \
	SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" fuzzers

$(foreach t,$(patsubst tests/fuzz/%.c,%,$(FUZZ_SRC)),\
  $(eval $(call test_rule,$(OBJ)/tests/fuzz/$(t).o,$(BUILD)/fuzz/$(t),$(call test_mods,$(t)),-fsanitize=fuzzer)))

fuzzers: $(FUZZ_BINS)

fuzz:
	$(Q)$(FUZZ_MAKE)
	$(Q)tests/fuzz/run.sh $(FUZZ_SECONDS)

fuzz-smoke:
	$(Q)$(FUZZ_MAKE)
	$(Q)FUZZ_FRESH=1 tests/fuzz/run.sh $(FUZZ_SMOKE_SECONDS)

deps:
	$(Q)tests/deps.sh

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)BUILD=$(BUILD) tests/demo.sh

bench: all bench-tools
	$(Q)BUILD=$(BUILD) bench/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/groundtruth
	install -m 755 $(GT_RECORD) $(GT_ANALYZE) $(GT_RENDER) $(GT_PIPELINE) $(DESTDIR)$(PREFIX)/bin/
	$(if $(wildcard $(AGENT)),install -m 755 $(AGENT) $(DESTDIR)$(PREFIX)/lib/groundtruth/)
	install -m 755 $(PL_SO) $(DESTDIR)$(PREFIX)/lib/groundtruth/

clean:
	rm -rf $(BUILD)

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)
