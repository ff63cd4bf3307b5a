# resgen: YAML spec -> generator -> emitted C -> one binary per network.
#
#   make                  the generator and a binary for every specs/*.yaml
#   make build/bin/NAME   the binary of specs/NAME.yaml
#   make demo             install what is missing, then train the demo spec
#   make test             install what is missing, then run every test, plain
#                         and under AddressSanitizer + UBSan
#   make test-sanitize    only the sanitizer run
#   make diff A=X B=Y     the emitted code of specs/X.yaml against specs/Y.yaml
#   make bench            training speed of preact-110 on synthetic data
#   make paper            a binary for every spec of specs/paper/ (the paper's tables)
#   make golden           refresh the golden copies of emitted code on purpose
#   make deps             install the Debian packages the project needs

BUILD ?= build
CC ?= gcc
# Debian packages: compiler, libyaml, BLIS (OpenMP build), cmocka, zlib,
# Fashion-MNIST for the demo and the end-to-end test, and PyTorch (with numpy
# and PyYAML) for the independent check of tests/reference/.
PACKAGES := gcc make libc6-dev libyaml-dev libblis-dev libcmocka-dev zlib1g-dev dataset-fashion-mnist \
	python3 python3-torch python3-numpy python3-yaml
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Emitted code and runtime: -O3 (vectorised im2col, BN and elementwise loops
# measured 40% faster than -O2 on the demo). Sanitizer builds use -O1, the
# usual level for AddressSanitizer, which also halves their compile time.
OPTIMISE := -O3
ifeq ($(SANITIZE),1)
SANITIZE_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
OPTIMISE := -O1
endif
# No -ffast-math anywhere: the f64 build is gradient-checked, and the f32
# build is compared with it.
WARNINGS := -Wall -Wextra -Werror
COMMON := -std=gnu11 -g -D_GNU_SOURCE -fopenmp -MMD -MP $(SANITIZE_FLAGS)
GENERATOR_CFLAGS := -O2 $(WARNINGS) $(COMMON)
RUNTIME_CFLAGS := $(OPTIMISE) -march=native $(WARNINGS) $(COMMON) -Iruntime
LDFLAGS_ALL := -fopenmp $(SANITIZE_FLAGS)
RUNTIME_LIBS := -lblis -lz -lm

RESGEN := $(BUILD)/bin/resgen
GENERATOR_OBJECTS := $(patsubst generator/%.c,$(BUILD)/obj/generator/%.o,$(wildcard generator/*.c))
TEMPLATES := $(wildcard templates/*.tmpl templates/ops/*.tmpl)
RUNTIME_SOURCES := $(filter-out runtime/main.c,$(wildcard runtime/*.c))
RUNTIME_F32 := $(patsubst runtime/%.c,$(BUILD)/obj/f32/%.o,$(RUNTIME_SOURCES))
RUNTIME_F64 := $(patsubst runtime/%.c,$(BUILD)/obj/f64/%.o,$(RUNTIME_SOURCES))
NAMES := $(patsubst specs/%.yaml,%,$(wildcard specs/*.yaml))
PAPER_NAMES := $(patsubst specs/%.yaml,%,$(wildcard specs/paper/*.yaml))

.PHONY: all deps check-deps demo test test-plain test-sanitize test-reference reference-binaries \
	reference-run diff bench golden paper clean
.SECONDARY:
.DELETE_ON_ERROR:

all: $(RESGEN) $(NAMES:%=$(BUILD)/bin/%)

# The paper's tables: specs/paper/NAME.yaml -> build/bin/paper/NAME
paper: $(RESGEN) $(PAPER_NAMES:%=$(BUILD)/bin/%)

# ---- dependencies -----------------------------------------------------------

deps:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null || exit 1; \
	fi; \
	$(MAKE) --no-print-directory check-deps

check-deps:
	@ok=1; \
	check() { if [ -e "$$2" ]; then echo "found $$1 ($$2)"; else echo "MISSING $$1: install Debian package $$3 (or run make deps)"; ok=0; fi; }; \
	check libyaml /usr/include/yaml.h libyaml-dev; \
	check BLIS /usr/include/x86_64-linux-gnu/blis.h libblis-dev; \
	check cmocka /usr/include/cmocka.h libcmocka-dev; \
	check zlib /usr/include/zlib.h zlib1g-dev; \
	check OpenMP "$$($(CC) -print-file-name=libgomp.so)" gcc; \
	check Fashion-MNIST /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz dataset-fashion-mnist; \
	check PyTorch /usr/lib/python3/dist-packages/torch python3-torch; \
	[ $$ok = 1 ]

# ---- the generator ------------------------------------------------------------

$(RESGEN): $(GENERATOR_OBJECTS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lyaml -lm

$(BUILD)/obj/generator/%.o: generator/%.c
	@mkdir -p $(@D)
	$(CC) $(GENERATOR_CFLAGS) -c $< -o $@

# ---- emitted code and binaries ------------------------------------------------
# Emitted code depends on its spec, the generator and the templates; the
# binary on the emitted code (headers tracked by -MMD) and the runtime.

generated/%/net.c: specs/%.yaml $(RESGEN) $(TEMPLATES)
	$(RESGEN) generate $< -o generated/$*

$(BUILD)/obj/net/%.o: generated/%/net.c
	@mkdir -p $(@D)
	$(CC) $(RUNTIME_CFLAGS) -Igenerated/$* -c $< -o $@

$(BUILD)/bin/%: $(BUILD)/obj/net/%.o $(BUILD)/obj/f32/main.o $(RUNTIME_F32)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(RUNTIME_LIBS)

$(BUILD)/obj/f32/%.o: runtime/%.c
	@mkdir -p $(@D)
	$(CC) $(RUNTIME_CFLAGS) -c $< -o $@

$(BUILD)/obj/f64/%.o: runtime/%.c
	@mkdir -p $(@D)
	$(CC) $(RUNTIME_CFLAGS) -DRESGEN_F64 -c $< -o $@

# ---- the demo -----------------------------------------------------------------

demo:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory $(BUILD)/bin/demo
	$(BUILD)/bin/demo train --log $(BUILD)/demo.csv

# ---- make diff A=NAME1 B=NAME2 --------------------------------------------------

diff:
	@[ -n "$(A)" ] && [ -n "$(B)" ] || { echo "usage: make diff A=NAME1 B=NAME2 (specs/NAME.yaml; paper/NAME for specs/paper/)"; exit 2; }
	@$(MAKE) --no-print-directory generated/$(A)/net.c generated/$(B)/net.c
	@diff -u generated/$(A)/net.c generated/$(B)/net.c; \
	 diff -u generated/$(A)/kernels.h generated/$(B)/kernels.h; true

# ---- benchmark -----------------------------------------------------------------

# Training speed of preact-110 at batch 128, then PyTorch on the same network
# and weights in the same run, and the ratio of the two.
bench: $(BUILD)/bin/preact-110 $(BUILD)/bench/bench-preact-110
	@$(BUILD)/bench/bench-preact-110 | tee $(BUILD)/bench/resgen.txt
	@/usr/bin/python3 tests/reference/bench.py specs/preact-110.yaml $(BUILD)/bin/preact-110 \
		--against $(BUILD)/bench/resgen.txt

$(BUILD)/bench/bench-%: tests/bench.c $(BUILD)/obj/net/%.o $(RUNTIME_F32)
	@mkdir -p $(@D)
	$(CC) $(RUNTIME_CFLAGS) -o $@ $^ $(LDFLAGS_ALL) $(RUNTIME_LIBS)

include tests/tests.mk

clean:
	rm -rf build generated

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
