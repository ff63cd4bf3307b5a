# resgen: YAML spec -> generator -> emitted C -> one binary per network.
# make help prints the lines below that start with "##": every target, one
# line each (tests/test_refusals.c checks that none is missing).
##
## Building
##   make                  the generator and a binary for every specs/*.yaml
##   make build/bin/NAME   the binary of specs/NAME.yaml
##   make build/bin/mpi/NAME  its Open MPI flavour, for mpirun -np P
##   make mpi              the Open MPI flavour of every specs/*.yaml
##   make paper            a binary for every spec of specs/paper/ (the paper's tables)
##   make deps             install the Debian packages the project needs
##   make check-deps       say which of them are missing; fails if any is
##   make clean            remove build/ and generated/
##   make ... MARCH=M      build everything for the instruction set M alone (build/march-M/);
##                         the default, x86-64-v3 with avx2 and avx512 kernels chosen at
##                         start, runs on every node at native speed, to the same bits
##   make ... V=1          show the commands, not one short line per file
##   make ... OUT_OF_LINE=1  networks call the kernels compiled once: quicker to compile, slower to run
##   make ... EVERY_ALGORITHM=1  every convolution algorithm compiled in (build/every-algorithm/),
##                         for RESGEN_CHOICES to force one other than the rules'
##
## Using it
##   make demo             install what is missing, then train the demo spec
##   make plot LOG=F.csv   a run's curves (F.png, F.svg)
##   make plot-gradflow GRADFLOW='A.csv B.csv' OUT=NAME  gradient flow of gradflow CSVs
##   make plot-confusion CONFUSION=F.csv  an evaluate --confusion matrix, drawn
##   make diff A=X B=Y     the emitted code of specs/X.yaml against specs/Y.yaml
##
## Studies (specs/studies/NAME.yaml; docs/cluster.md for Slurm)
##   make study S=NAME     train every variant x seed, resuming where it stopped;
##                         results/NAME/report.md
##   make study-submit S=NAME  the same as a Slurm job array (STUDY_THREADS cores
##                         a run, or a rank of STUDY_RANKS); returns at once
##   make study-status S=NAME  each run's state and the study's expected finish
##   make study-report S=NAME  the report of the runs ended so far
##   make study-cancel S=NAME  cancel its tasks in Slurm's queue (the runs keep their checkpoints)
##   make study-binaries STUDY=FILE  the study's binaries (make study builds them)
##
## Tests
##   make test             install what is missing, then run every test, plain
##                         and under AddressSanitizer + UBSan
##   make check            the quick tier: unit, golden, kernel, a few gradient
##                         checks and the hostile-input tests
##   make check-plain      the quick tier without its parallel build first
##   make test-plain       every test of the plain build
##   make test-sanitize    the tests under AddressSanitizer + UBSan
##   make test-programs    build test-plain's programs and what they run, run none
##   make test-programs-sanitize  the same for test-sanitize
##   make native-demo      the demo built for this machine alone (MARCH=native), for test_isa
##   make test-cluster     the study on a one-node Slurm the test starts and stops
##   make test-beside-cluster  what make test runs beside test-cluster: the PyTorch
##                         check and the sanitizer build
##   make test-reference   every reference spec against float64 PyTorch, and evaluate
##   make reference-binaries  the reference specs' binaries (test-reference's first step)
##   make reference-run    the PyTorch check of those binaries
##   make reference-evaluate  evaluate and the export against PyTorch
##   make reference-torchvision  ResNet-50 and ResNet-18 against torchvision's
##   make fuzz             fuzz the spec, study and weights readers (FUZZ_SECONDS=600 in all)
##   make golden           refresh the golden copies of emitted code on purpose
##   make dumps DUMPS=DIR  step --dump of the networks a kernel change must keep bitwise
##
## Speed
##   make bench            training speed and memory against PyTorch (BENCH="NAME ..."), bf16
##                         rows against PyTorch's bf16 autocast and resgen f32
##   make bench-mpi        1 rank x 2 threads against 2 ranks x 1 thread, and the
##                         cost of summing gradients (BENCH_MPI="NAME ...")
##   make bench-march      the default build (instruction sets chosen at run time) against MARCH=native
##   make bench-bf16       one thread's bf16 products (each path, both orders) against the f32 GEMM
##
##   make help             this list

# The instructions the runtime and the networks are compiled for. By
# default x86-64-v3 (AVX2 and FMA), with each network's hot code
# (kernels.c) compiled once more for each instruction set of ISAS, the
# best of which a run takes at start (runtime/machine/isa.h): one binary
# for every node, as fast as a native one, computing the same bits on each
# (docs/cluster.md). MARCH=native (this machine's) or another name gcc's
# -march takes compiles everything, the hot code once, for that, in a
# build folder of its own. A binary refuses a processor that lacks one of
# its instructions, in one line.
MARCH ?= x86-64-v3
# Each convolution compiles the algorithms its shape's rules choose alone
# (runtime/kernels/sizes.h, CONV_FORWARD_RULE...), which shortens a deep
# network's compile time (docs/build.md); EVERY_ALGORITHM=1 compiles every
# algorithm into each, in a folder of its own, for RESGEN_CHOICES to force another
# (docs/performance.md).
EVERY_ALGORITHM ?= 0
BUILD ?= build$(if $(filter-out x86-64-v3,$(MARCH)),/march-$(MARCH))$(if $(filter 1,$(EVERY_ALGORITHM)),/every-algorithm)
# The instruction sets and their flags, read from their one registry
# (runtime/machine/isas.h, a row each: X(name, NAME, "flags", runs)).
# Widest first: make -j starts the longest compilation first.
ISA_ROW_SED := s/^[[:space:]]*X(\([a-z0-9_]*\), [A-Z0-9_]*, "\([^"]*\)".*/\1@\2/p
ISA_ROWS := $(shell sed -n '$(ISA_ROW_SED)' runtime/machine/isas.h | tr ' ' '~')
ISA_NAMES := $(foreach row,$(ISA_ROWS),$(firstword $(subst @, ,$(row))))
$(foreach row,$(ISA_ROWS),$(eval ISA_FLAGS_$(firstword $(subst @, ,$(row))) := $(subst ~, ,$(word 2,$(subst @, ,$(row))))))
$(if $(ISA_NAMES),,$(error runtime/machine/isas.h: no instruction set read from its rows))
ISAS := $(if $(filter x86-64-v3,$(MARCH)),$(shell printf '%s\n' $(ISA_NAMES) | tac),march)
ISA_FLAGS_march :=
CC ?= gcc

# Quiet by default: one line per file built; V=1 prints the commands.
ifeq ($(V),1)
Q :=
say = @:
else
Q := @
say = @printf '  %-5s %s\n' $(1) $(2)
endif
# Debian packages: compiler, libyaml, BLIS (OpenMP build), cmocka, zlib,
# Fashion-MNIST for the demo and the end-to-end test, PyTorch (with numpy
# and PyYAML) for the independent check of tests/reference/ and the export
# of tools/pytorch/ (with ONNX to check its ONNX files), clang with
# libFuzzer for make fuzz, gnuplot for make plot, and Open MPI for the
# binaries' MPI flavour (build/bin/mpi/NAME), Slurm with munge for
# studies on a cluster (make study-submit) and the test cluster, and
# qemu-user for the test of a binary on an older processor.
PACKAGES := gcc make libc6-dev libyaml-dev libblis-dev libcmocka-dev zlib1g-dev libturbojpeg0-dev libstb-dev \
	dataset-fashion-mnist python3-pil \
	python3 python3-torch python3-torchvision python3-numpy python3-yaml python3-onnx clang libfuzzer-14-dev gnuplot-nox \
	openmpi-bin libopenmpi-dev slurm-wlm munge qemu-user
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Emitted code and runtime: -O3 (it vectorises im2col, BN and the
# elementwise loops). Sanitizer builds use -O1, AddressSanitizer's usual
# level. Debug information is full (-g) in the generator and the runtime,
# line tables only (-g1) in the emitted networks and the sanitizer build,
# which is all a report, a backtrace or perf needs. What each choice
# measured: docs/build.md.
OPTIMISE := -O3
DEBUG := -g
ifeq ($(SANITIZE),1)
SANITIZE_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
OPTIMISE := -O1
DEBUG := -g1
endif
# No -ffast-math anywhere: the f64 build is gradient-checked, and the f32
# build is compared with it.
WARNINGS := -Wall -Wextra -Werror
COMMON := -std=gnu11 $(DEBUG) -D_GNU_SOURCE -fopenmp -MMD -MP $(SANITIZE_FLAGS)
# The generator's folders, in the order its stages run (common/ and study/
# beside them): each is on the include path, so an #include names a file.
GENERATOR_DIRS := generator/common generator/stage1-spec generator/stage2-graph generator/stage3-plan \
	generator/stage4-emit generator/study
GENERATOR_SOURCES := generator/main.c $(foreach d,$(GENERATOR_DIRS),$(wildcard $(d)/*.c))
# The runtime's rooms, highest first, each including only those below it
# (docs/build.md; tests/test_rooms.c), each on the include path as the
# generator's folders are: the command line; what a run does (the loop,
# evaluation, step); the run's state (memory, weights, checkpoints); the
# data; parallelism (threads, ranks); the machine (BLIS, the instruction
# sets, bf16); and what the generator links too. runtime/ itself holds
# the contract with emitted code (net_api.h, real.h, same_bits.h) and the
# kernel library (kernels/).
RUNTIME_DIRS := runtime/command runtime/train runtime/run runtime/data runtime/parallel runtime/machine \
	runtime/shared
# The generator sees runtime/shared/ and the root only: net_api.h, and the
# kernels' size rules (kernels/sizes.h), which its plan sizes scratch by.
GENERATOR_CFLAGS := -O2 $(WARNINGS) $(COMMON) -Iruntime -Iruntime/shared $(addprefix -I,$(GENERATOR_DIRS))
# -ffp-contract=fast (GNU C's default, pinned): every compilation, for
# any instruction set, fuses a multiply and an add alike.
RUNTIME_CFLAGS := $(OPTIMISE) -march=$(MARCH) -DRESGEN_MARCH='"$(MARCH)"' -ffp-contract=fast $(WARNINGS) $(COMMON) -Iruntime \
	$(addprefix -I,$(RUNTIME_DIRS))
# Emitted code (and test_kernels, which includes it). OUT_OF_LINE=1
# compiles a network's instances to call the kernel library compiled once
# (runtime/kernels/library.c, KERNEL_LIBRARY_F32 below), which its binary
# links: the same code at the same level, seconds to compile rather than
# a minute, and slower to run. The sanitizer build does, so that one
# instrumented copy serves every call, and so do the tests' study networks
# (docs/build.md).
# Its -g1 follows COMMON's -g, and GCC takes the last level given.
# NET_BASE_CFLAGS are NET_CFLAGS less the choice: what the kernel library
# object is compiled with, and the tests' networks out of line add to.
OUT_OF_LINE ?= $(if $(filter 1,$(SANITIZE)),1,0)
NET_BASE_CFLAGS := $(RUNTIME_CFLAGS) -g1
NET_CFLAGS := $(NET_BASE_CFLAGS) $(if $(filter 1,$(OUT_OF_LINE)),-DRESGEN_OUT_OF_LINE) \
	$(if $(filter 1,$(EVERY_ALGORITHM)),-DRESGEN_EVERY_ALGORITHM)
# libgomp, GCC's OpenMP runtime, is linked in whole and its entry points
# exported, so that BLIS (Debian's is built with OpenMP) runs on the same
# copy: the binary can then tell it how long its threads spin before they
# sleep (threads.c, docs/shared-machine.md) without touching the
# environment, which libgomp.so reads in its constructor before any of the
# binary's code runs.
OPENMP_LINK := -Wl,--whole-archive -l:libgomp.a -Wl,--no-whole-archive -Wl,--export-dynamic-symbol='omp_*' \
	-Wl,--export-dynamic-symbol='GOMP_*'
LDFLAGS_ALL := $(OPENMP_LINK) $(SANITIZE_FLAGS)
RUNTIME_LIBS := -lblis -lturbojpeg -lstb -lz -lm

RESGEN := $(BUILD)/bin/resgen
# Builds use every core (JOBS): $(call sub_jobs,N) gives a sub-make -jN,
# unless it already shares a parent's job slots (a -j given again would
# take it out of them, with a warning); SUB_JOBS is -j$(JOBS) so given.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
sub_jobs = $(if $(findstring jobserver,$(MAKEFLAGS)),,-j$(1))
SUB_JOBS = $(call sub_jobs,$(JOBS))
# The generator links runtime/shared/: the one way files are replaced, the
# one way outside text is made printable, "did you mean", the one way a
# real is written, and the recipe's words (resgen summary describes the
# schedule as a run does; a study's plan writes --set as a run reads it).
SHARED_RUNTIME := $(patsubst runtime/shared/%.c,%,$(wildcard runtime/shared/*.c))
GENERATOR_OBJECTS := $(patsubst generator/%.c,$(BUILD)/obj/generator/%.o,$(GENERATOR_SOURCES)) \
	$(SHARED_RUNTIME:%=$(BUILD)/obj/generator/%.o)
TEMPLATES := $(wildcard templates/*.tmpl templates/ops/*.tmpl)
# ranks.c (a process alone) links into every binary; the MPI flavour links
# ranks_mpi.c in its place, compiled with mpicc's flags (MPI_CFLAGS).
# Objects lie flat in obj/f32/ and obj/f64/ (every name is the runtime's
# once).
RUNTIME_SOURCES := $(filter-out runtime/command/main.c runtime/parallel/ranks_mpi.c,$(wildcard $(RUNTIME_DIRS:%=%/*.c)))
RUNTIME_F32 := $(patsubst %.c,$(BUILD)/obj/f32/%.o,$(notdir $(RUNTIME_SOURCES)))
RUNTIME_F64 := $(patsubst %.c,$(BUILD)/obj/f64/%.o,$(notdir $(RUNTIME_SOURCES)))
MPI_CFLAGS = $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS = $(shell mpicc --showme:link 2>/dev/null)
MPI_RUNTIME_F32 := $(filter-out %/ranks.o,$(RUNTIME_F32)) $(BUILD)/obj/f32/ranks_mpi.o
MPI_RUNTIME_F64 := $(filter-out %/ranks.o,$(RUNTIME_F64)) $(BUILD)/obj/f64/ranks_mpi.o
NAMES := $(patsubst specs/%.yaml,%,$(wildcard specs/*.yaml))
PAPER_NAMES := $(patsubst specs/%.yaml,%,$(wildcard specs/paper/*.yaml))

# ---- names given on the command line ------------------------------------------
# Checked here, before any rule, $(shell) or recipe uses them, so that no
# character of a name reaches a shell or gnuplot as code, and no name
# leads outside the project. Spec and study names (A, B, S, BENCH...)
# follow the study reader's rule: a-z, 0-9, '-' and '/', each part
# starting with a letter or digit. Paths (LOG, GRADFLOW, CONFUSION, OUT, STUDY,
# RESULTS) are letters, digits, '.', '_', '-' and '/', not starting with
# '-'. An error is one line (make's own), exit status 2.
empty :=
space := $(empty) $(empty)
lower_chars := a b c d e f g h i j k l m n o p q r s t u v w x y z
digit_chars := 0 1 2 3 4 5 6 7 8 9
upper_chars := A B C D E F G H I J K L M N O P Q R S T U V W X Y Z
# $(call drop_chars,TEXT,CHARS): TEXT less every character of CHARS.
drop_chars = $(if $(2),$(call drop_chars,$(subst $(firstword $(2)),,$(1)),$(wordlist 2,$(words $(2)),$(2))),$(1))
# Spaces are made visible first: a name holds none.
left_over = $(call drop_chars,$(subst $(space),@,$(1)),$(2))
name_ok = $(and $(1),$(if $(call left_over,$(1),$(lower_chars) $(digit_chars) - /),,ok),$(if \
	$(filter -% /% %/ %/-% %//%,$(1)),,ok))
path_ok = $(and $(1),$(if $(call left_over,$(1),$(lower_chars) $(upper_chars) $(digit_chars) - / . _),,ok),$(if \
	$(filter -%,$(1)),,ok))
bad_name = $(error $(1)='$(2)' is not a name resgen accepts: use a-z, 0-9, '-' and '/', each part starting with a letter or digit, such as paper/t2-a-original-110)
bad_path = $(error $(1)='$(2)' is not a path resgen accepts: use letters, digits, '.', '_', '-' and '/', not starting with '-', such as build/demo.csv)
given = $(filter command line environment,$(origin $(1)))
$(foreach v,A B S,$(if $(call given,$(v)),$(if $(call name_ok,$($(v))),,$(call bad_name,$(v),$($(v))))))
$(foreach v,BENCH BENCH_SCALING BENCH_MPI BENCH_SHARED BENCH_MARCH_NAMES,$(if $(call given,$(v)),$(foreach n,$($(v)),$(if \
	$(call name_ok,$(n)),,$(call bad_name,$(v),$($(v)))))))
$(foreach v,STUDY RESULTS DUMPS,$(if $(call given,$(v)),$(if $(call path_ok,$($(v))),,$(call bad_path,$(v),$($(v))))))
# Numbers (BENCH_ROUNDS, BENCH_LOOPS, ...) are whole numbers in plain
# decimal; BENCH_PYTORCH_LAYOUT is one of its two layouts; BUILD and
# RESGEN_VERSION follow the paths' rule.
number_ok = $(and $(1),$(if $(call left_over,$(1),$(digit_chars)),,ok),$(if $(filter 0%,$(1)),$(filter 0,$(1)),ok))
bad_number = $(error $(1)='$(2)' is not what resgen accepts: use whole numbers from $(3) in plain decimal, such as 2)
# $(call check_number,VARIABLES,LEAST): each variable given is one number.
check_number = $(foreach v,$(1),$(if $(call given,$(v)),$(if $(and $(filter 1,$(words $($(v)))),$(call \
	number_ok,$(strip $($(v)))),$(filter-out $(filter-out $(2),0),$(strip $($(v))))),,$(error $(v)='$($(v))' is not \
	what resgen accepts: use one whole number from $(2) in plain decimal, such as 2))))
# $(call check_numbers,VARIABLES,LEAST): each word of each variable given.
check_numbers = $(foreach v,$(1),$(if $(call given,$(v)),$(if $(strip $($(v))),,$(call bad_number,$(v),,$(2)))$(foreach \
	n,$($(v)),$(if $(and $(call number_ok,$(n)),$(filter-out $(2),$(filter 0,$(n)))),$(call bad_number,$(v),$($(v)),$(2)),$(if \
	$(call number_ok,$(n)),,$(call bad_number,$(v),$($(v)),$(2)))))))
$(call check_numbers,BENCH_ROUNDS BENCH_MPI_STEPS BENCH_MARCH_STEPS FUZZ_SECONDS JOBS $(filter BENCH_BATCH_% BENCH_STEPS_%,$(.VARIABLES)),1)
$(call check_numbers,BENCH_LOOPS,0)
$(if $(call given,BENCH_PYTORCH_LAYOUT),$(if $(filter-out channels-last nchw,$(subst $(space),@,$(BENCH_PYTORCH_LAYOUT))),$(error \
	BENCH_PYTORCH_LAYOUT='$(BENCH_PYTORCH_LAYOUT)' is not a layout resgen's bench knows: use channels-last or nchw)))
$(foreach v,MARCH BENCH_MARCH,$(if $(call given,$(v)),$(if $(and $($(v)),$(if $(call left_over,$($(v)),$(lower_chars) \
	$(digit_chars) - _ .),,ok),$(if $(filter -%,$($(v))),,ok)),,$(error $(v)='$($(v))' is not an instruction set \
	resgen builds for: use native, or a name gcc's -march takes, such as x86-64-v3))))
$(foreach v,BUILD RESGEN_VERSION,$(if $(call given,$(v)),$(if $(call path_ok,$($(v))),,$(call bad_path,$(v),$($(v))))))
$(foreach v,OUT_OF_LINE SANITIZE TEST_HOOKS EVERY_ALGORITHM,$(if $(call given,$(v)),$(if $(filter-out 0 1,$(subst $(space),@,$($(v)))),$(error \
	$(v)='$($(v))' is not a setting resgen's make knows: use 0 or 1))))
# The plots' paths, where given or where a plot is made; GRADFLOW is a list.
$(foreach v,LOG OUT GRADFLOW CONFUSION,$(if $(or $(filter command line,$(origin $(v))),$(filter plot%,$(MAKECMDGOALS))),$(if \
	$(strip $(foreach f,$($(v)),$(if $(call path_ok,$(f)),,bad))),$(call bad_path,$(v),$($(v))))))

.PHONY: all help mpi bench-mpi bench-march bench-bf16 deps check-deps demo plot plot-gradflow plot-confusion study study-submit study-status study-report study-cancel study-binaries reference-torchvision native-demo test test-plain test-programs test-programs-sanitize test-beside-cluster test-sanitize test-reference reference-binaries reference-evaluate \
	reference-run diff bench golden paper fuzz dumps check check-plain test-cluster clean FORCE

help:
	@sed -n 's/^## \{0,1\}//p' $(firstword $(MAKEFILE_LIST))
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
	check libjpeg-turbo /usr/include/turbojpeg.h libturbojpeg0-dev; \
	check stb /usr/include/stb/stb_image_resize.h libstb-dev; \
	check torchvision /usr/lib/python3/dist-packages/torchvision python3-torchvision; \
	check PIL /usr/lib/python3/dist-packages/PIL python3-pil; \
	check OpenMP "$$($(CC) -print-file-name=libgomp.so)" gcc; \
	check Fashion-MNIST /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz dataset-fashion-mnist; \
	check PyTorch /usr/lib/python3/dist-packages/torch python3-torch; \
	check ONNX /usr/lib/python3/dist-packages/onnx python3-onnx; \
	check libFuzzer "$$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null)" libfuzzer-14-dev; \
	check gnuplot /usr/bin/gnuplot gnuplot-nox; \
	check "Open MPI" /usr/bin/mpicc libopenmpi-dev; \
	check mpirun /usr/bin/mpirun openmpi-bin; \
	check Slurm /usr/bin/sbatch slurm-wlm; \
	check qemu-user /usr/bin/qemu-x86_64 qemu-user; \
	check munge /usr/sbin/munged munge; \
	[ $$ok = 1 ]

# ---- the generator ------------------------------------------------------------

$(RESGEN): $(GENERATOR_OBJECTS)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ -lyaml -lm

$(BUILD)/obj/generator/%.o: generator/%.c
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(GENERATOR_CFLAGS) -c $< -o $@

$(SHARED_RUNTIME:%=$(BUILD)/obj/generator/%.o): $(BUILD)/obj/generator/%.o: runtime/shared/%.c
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(GENERATOR_CFLAGS) -c $< -o $@

# ---- emitted code and binaries ------------------------------------------------
# Emitted code depends on its spec, the generator and the templates; the
# binary on the emitted code (headers tracked by -MMD) and the runtime.
# The plain build's emitted code is generated/, which users read and diff;
# another build folder (the sanitizer's, another MARCH) has its own
# generator, so it emits its own copy, and neither makes the other's
# objects stale.
EMITTED := $(if $(filter build,$(BUILD)),generated,$(BUILD)/generated)

$(EMITTED)/%/net.c: specs/%.yaml $(RESGEN) $(TEMPLATES)
	$(call say,GEN,$<)
	$(Q)$(RESGEN) generate $< -o $(EMITTED)/$*

# An emitted network compiles in pieces, in parallel: GCC reads net.c
# once (-flto -c, to GCC's own intermediate code), then compiles its
# functions in as many partitions as there are cores (-flto=auto) into
# one ordinary object (-r, -flinker-output=nolto-rel), which every binary
# links as it would the object of one compilation; the code is the same
# (docs/build.md). The second step is given no -fopenmp: with it, GCC
# links a second copy of libgomp into the object, which --threads does
# not reach. Out of line (the sanitizer build, the tests' own networks) a
# network is its instances alone, and compiles in one piece.
# $(call net_compile,FLAGS): net.c ($<) to the object $@, FLAGS added.
net_compile = $(if $(filter -DRESGEN_OUT_OF_LINE,$(NET_CFLAGS) $(1)),$(CC) $(NET_CFLAGS) $(1) -c $< -o $@,$(CC) \
	$(NET_CFLAGS) $(1) -flto -MF $(@:.o=.d) -MT $@ -c $< -o $(@:.o=.lto.o) && \
	$(CC) $(filter-out -fopenmp,$(NET_CFLAGS)) $(1) -flto=auto -flinker-output=nolto-rel -r -nostdlib $(@:.o=.lto.o) -o $@ && \
	rm -f $(@:.o=.lto.o))
# A network's object is net.c's and kernels.c's, compiled once for each
# instruction set of ISAS (each into its own table), side by side, then
# joined into one relocatable object that every binary links as before:
# $(call network_rules,OBJECT,PARTS,SOURCES,FLAGS) makes OBJECT (a
# pattern, % the network) from PARTS/net.o and PARTS/kernels-ISA.o, of
# SOURCES/net.c and SOURCES/kernels.c (patterns too), FLAGS added to each.
define network_rules
$(1): $(foreach isa,$(ISAS),$(2)/kernels-$(isa).o) $(2)/net.o
	@mkdir -p $$(@D)
	$$(call say,LD,$$@)
	$$(Q)$$(CC) -r -nostdlib -o $$@ $$(filter %.o,$$^)
$(2)/net.o: $(3)/net.c
	@mkdir -p $$(@D)
	$$(call say,CC,$$<)
	$$(Q)$$(call net_compile,$(4) -I$$(<D))
$(foreach isa,$(ISAS),$(call kernels_rule,$(2),$(3),$(4),$(isa)))
endef
define kernels_rule
$(1)/kernels-$(4).o: $(2)/net.c
	@mkdir -p $$(@D)
	$$(call say,CC,$$(<D)/kernels.c@$(4))
	$$(Q)$$(CC) $$(NET_CFLAGS) $(3) $$(ISA_FLAGS_$(4)) -DNET_KERNELS=net_kernels_$(4) -I$$(<D) -c $$(<D)/kernels.c -o $$@

endef
$(eval $(call network_rules,$(BUILD)/obj/net/%.o,$(BUILD)/obj/parts/net/%,$(EMITTED)/%,))

# The kernel library's entry points, compiled once a build and flavour
# (runtime/kernels/library.c) as the networks are (NET_CFLAGS): what
# networks compiled out of line call, and link.
KERNEL_LIBRARY_F32 := $(BUILD)/obj/f32/kernel_library.o
KERNEL_LIBRARY_F64 := $(BUILD)/obj/f64/kernel_library.o
$(BUILD)/obj/%/kernel_library.o: runtime/kernels/library.c
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(NET_BASE_CFLAGS) $(if $(filter f64,$*),-DRESGEN_F64) -c $< -o $@
OUT_OF_LINE_F32 := $(if $(filter 1,$(OUT_OF_LINE)),$(KERNEL_LIBRARY_F32))

# TEST_HOOKS=1 links the tests' hooks into the training loop (tests/hooks.c;
# the study test's binaries take them).
$(BUILD)/bin/%: $(BUILD)/obj/net/%.o $(BUILD)/obj/f32/main.o $(RUNTIME_F32) $(OUT_OF_LINE_F32) \
		$(if $(filter 1,$(TEST_HOOKS)),$(BUILD)/obj/f32/hooks.o)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(RUNTIME_LIBS)

# A binary with no spec behind it: say which specs there are, or where one
# of that name lives (make's own message names no spec). Its prerequisite
# is made by a rule of its own, so make tries it only after the chain
# above (spec, emitted code, object) cannot be made; the name reaches no
# shell.
$(BUILD)/bin/%: $(BUILD)/no-spec/%
	@:
$(BUILD)/no-spec/%:
	$(error no spec specs/$*.yaml$(if $(wildcard specs/*/$(notdir $*).yaml),; did you mean \
	make $(patsubst specs/%.yaml,$(BUILD)/bin/%,$(wildcard specs/*/$(notdir $*).yaml)),; the specs are \
	$(NAMES) and $(words $(PAPER_NAMES)) in specs/paper/ (make $(BUILD)/bin/paper/NAME, or make paper)))

# The Open MPI flavour: the same network object and runtime, ranks_mpi.o
# for ranks.o.
$(BUILD)/bin/mpi/%: $(BUILD)/obj/net/%.o $(BUILD)/obj/f32/main.o $(MPI_RUNTIME_F32) $(OUT_OF_LINE_F32) \
		$(if $(filter 1,$(TEST_HOOKS)),$(BUILD)/obj/f32/hooks.o)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(RUNTIME_LIBS) $(MPI_LIBS)

mpi: $(NAMES:%=$(BUILD)/bin/mpi/%)

$(BUILD)/obj/%/ranks_mpi.o: runtime/parallel/ranks_mpi.c
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(RUNTIME_CFLAGS) $(if $(filter f64,$*),-DRESGEN_F64) $(MPI_CFLAGS) -c $< -o $@

# The version binaries record in checkpoints: compiled into version.o
# only, which rebuilds when it changes (the stamp is rewritten only then).
RESGEN_VERSION := $(or $(shell git describe --always --dirty --abbrev=12 2>/dev/null),unknown)
$(BUILD)/version.stamp: FORCE
	@mkdir -p $(@D)
	@[ "$$(cat $@ 2>/dev/null)" = '$(RESGEN_VERSION)' ] || echo '$(RESGEN_VERSION)' > $@
FORCE:
$(BUILD)/obj/f32/version.o $(BUILD)/obj/f64/version.o: $(BUILD)/version.stamp
$(BUILD)/obj/f32/version.o $(BUILD)/obj/f64/version.o: RUNTIME_CFLAGS += -DRESGEN_VERSION='"$(RESGEN_VERSION)"'

# One pair of rules a folder of the runtime.
define runtime_rules
$$(BUILD)/obj/f32/%.o: $(1)/%.c
	@mkdir -p $$(@D)
	$$(call say,CC,$$<)
	$$(Q)$$(CC) $$(RUNTIME_CFLAGS) -c $$< -o $$@

$$(BUILD)/obj/f64/%.o: $(1)/%.c
	@mkdir -p $$(@D)
	$$(call say,CC,$$<)
	$$(Q)$$(CC) $$(RUNTIME_CFLAGS) -DRESGEN_F64 -c $$< -o $$@
endef
$(foreach d,$(RUNTIME_DIRS),$(eval $(call runtime_rules,$(d))))

# ---- the demo -----------------------------------------------------------------

demo:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory $(BUILD)/bin/demo
	$(BUILD)/bin/demo train --log $(BUILD)/demo.csv --checkpoint $(BUILD)/demo.ckpt --save-weights $(BUILD)/demo.weights
	@echo "wrote the log $(BUILD)/demo.csv (make plot draws it), the weights $(BUILD)/demo.weights and the checkpoint $(BUILD)/demo.ckpt"
	@echo "each image's prediction: $(BUILD)/bin/demo evaluate --load-weights $(BUILD)/demo.weights --predictions $(BUILD)/demo-predictions.csv"

# ---- make diff A=NAME1 B=NAME2 --------------------------------------------------

# The story first: the spec values that differ and the units whose ops
# changed (resgen units), then the unified diff of the emitted code.
diff:
	@[ -n "$(A)" ] && [ -n "$(B)" ] || { echo "usage: make diff A=NAME1 B=NAME2 (specs/NAME.yaml; paper/NAME for specs/paper/)"; exit 2; }
	@$(MAKE) --no-print-directory $(RESGEN) $(EMITTED)/$(A)/net.c $(EMITTED)/$(B)/net.c
	@mkdir -p $(BUILD)/diff
	@for n in $(A) $(B); do \
	  awk '/\*\//{ exit } /^ \*   /{ sub(/^ \*   /, ""); print }' $(EMITTED)/$$n/net.c > $(BUILD)/diff/$$(echo $$n | tr / -).spec; \
	 done
	@echo "== the specs, $(A) -> $(B)"; \
	 diff $(BUILD)/diff/$$(echo $(A) | tr / -).spec $(BUILD)/diff/$$(echo $(B) | tr / -).spec | sed -n 's/^< /- /p; s/^> /+ /p'; \
	 echo "== the units whose ops changed"; \
	 $(RESGEN) units specs/$(A).yaml specs/$(B).yaml; \
	 echo "== the emitted code"; \
	 diff -u $(EMITTED)/$(A)/net.c $(EMITTED)/$(B)/net.c; \
	 diff -u $(EMITTED)/$(A)/kernels.h $(EMITTED)/$(B)/kernels.h; true

# ---- plots: make plot LOG=FILE.csv, make plot-gradflow GRADFLOW='A.csv B.csv' OUT=NAME,
# make plot-confusion CONFUSION=FILE.csv

# Paths reach gnuplot as arguments (gnuplot -c), never as code. A picture
# never replaces an input: an input that is one of the pictures' files
# (compared as files, so a link counts) is refused, and so is a confusion
# matrix larger than any network's (1000 classes).
refuse_overwrite = for f in $(1); do for picture in '$(2).png' '$(2).svg'; do [ ! "$$f" -ef "$$picture" ] || \
	{ echo "$$f: the picture would be written over it, as $$picture; give the input a name ending in .csv" >&2; exit 2; }; done; done
plot:
	@[ -n "$(LOG)" ] || { echo "usage: make plot LOG=FILE.csv (a train --log): writes FILE.png and FILE.svg"; exit 2; }
	@[ -f '$(LOG)' ] || { echo "$(LOG): no such log"; exit 2; }
	@$(call refuse_overwrite,'$(LOG)',$(basename $(LOG)))
	@gnuplot -c tools/plot-log.gp '$(LOG)' '$(basename $(LOG))'
	@echo "wrote $(basename $(LOG)).png and $(basename $(LOG)).svg"

plot-gradflow:
	@[ -n "$(GRADFLOW)" ] && [ -n "$(OUT)" ] || { echo "usage: make plot-gradflow GRADFLOW='A.csv B.csv' OUT=NAME (gradflow --csv files): writes NAME.png and NAME.svg"; exit 2; }
	@for f in $(GRADFLOW); do [ -f "$$f" ] || { echo "$$f: no such gradflow CSV"; exit 2; }; done
	@$(call refuse_overwrite,$(GRADFLOW),$(OUT))
	@gnuplot -c tools/plot-gradflow.gp '$(OUT)' '$(strip $(GRADFLOW))'
	@echo "wrote $(OUT).png and $(OUT).svg"

plot-confusion:
	@[ -n "$(CONFUSION)" ] || { echo "usage: make plot-confusion CONFUSION=FILE.csv (an evaluate --confusion): writes FILE.png and FILE.svg"; exit 2; }
	@[ -f '$(CONFUSION)' ] || { echo "$(CONFUSION): no such confusion matrix"; exit 2; }
	@$(call refuse_overwrite,'$(CONFUSION)',$(basename $(CONFUSION)))
	@[ "$$(stat -c %s '$(CONFUSION)')" -le 16000000 ] && head -n 1002 '$(CONFUSION)' | awk -F, 'NR > 1001 || NF > 1001 { exit 1 }' || \
		{ echo "$(CONFUSION): larger than a confusion matrix of 1000 classes, the most a network has (1001 rows of 1001 fields, 16 MB)" >&2; exit 2; }
	@mkdir -p $(BUILD)
	@/usr/bin/python3 tools/confusion-table '$(CONFUSION)' $(BUILD)/confusion.tsv
	@gnuplot -c tools/plot-confusion.gp $(BUILD)/confusion.tsv '$(basename $(CONFUSION))' '$(CONFUSION)'
	@echo "wrote $(basename $(CONFUSION)).png and $(basename $(CONFUSION)).svg"

# ---- studies: make study S=NAME (specs/studies/NAME.yaml) -------------------------
# resgen writes each variant's spec (build/study/NAME/VARIANT.yaml, rewritten
# only when it changes) and the list of runs; make builds each binary once
# (build/bin/study/NAME/VARIANT; variants that differ in run-time settings
# alone share the first's, given --set); tools/run-study estimates the time, runs
# what is not finished (resuming from checkpoints), measures the gradient
# flow and writes results/NAME/report.md with its plots. STUDY=FILE runs a
# study file from elsewhere, RESULTS=DIR writes elsewhere.

STUDY ?= specs/studies/$(S).yaml
STUDY_NAME = $(basename $(notdir $(STUDY)))
RESULTS ?= results/$(STUDY_NAME)

$(EMITTED)/study/%/net.c: $(BUILD)/study/%.yaml $(RESGEN) $(TEMPLATES)
	$(call say,GEN,$<)
	$(Q)$(RESGEN) generate $< -o $(EMITTED)/study/$*

study: $(RESGEN)
	@[ -n "$(S)$(filter-out specs/studies/.yaml,$(STUDY))" ] || { echo "usage: make study S=NAME (specs/studies/NAME.yaml), or STUDY=FILE; RESULTS=DIR (default results/NAME)"; ls specs/studies/*.yaml 2>/dev/null | sed 's|specs/studies/\(.*\)\.yaml|  S=\1|'; exit 2; }
	@$(RESGEN) study plan '$(STUDY)' -o '$(BUILD)/study/$(STUDY_NAME)'
	@tools/run-study --check '$(RESGEN)' '$(STUDY)' '$(BUILD)/study/$(STUDY_NAME)' '$(BUILD)/bin/study/$(STUDY_NAME)' '$(RESULTS)'
	@$(MAKE) --no-print-directory $(SUB_JOBS) study-binaries STUDY='$(STUDY)'
	@RESGEN_VERSION='$(RESGEN_VERSION)' tools/run-study '$(RESGEN)' '$(STUDY)' '$(BUILD)/study/$(STUDY_NAME)' '$(BUILD)/bin/study/$(STUDY_NAME)' '$(RESULTS)'

# The same study on a Slurm cluster: make study-submit sends each run not
# yet ended as a task of a job array (STUDY_THREADS cores each, all of
# this machine's by default) and returns; make study-status lists the
# runs; make study-report writes the report from the runs ended so far
# (the array's last task has it written anyway); make study-cancel
# cancels the study's tasks in the queue, which keep their checkpoints
# for a later submission to resume. STUDY_RANKS=N splits
# each run over N MPI ranks of STUDY_THREADS cores each (the binaries'
# Open MPI flavour, started by srun). tools/slurm-study, docs/cluster.md.
STUDY_THREADS ?= $(shell nproc 2>/dev/null || echo 1)
STUDY_RANKS ?= 1
$(call check_number,STUDY_THREADS STUDY_RANKS,1)
study_bin = $(BUILD)/bin/$(if $(filter-out 1,$(STUDY_RANKS)),mpi/)study/$(STUDY_NAME)
study_mpi_bin = $(BUILD)/bin/mpi/study/$(STUDY_NAME)
study_arguments = '$(RESGEN)' '$(STUDY)' '$(BUILD)/study/$(STUDY_NAME)' '$(study_bin)' '$(RESULTS)'

study-submit: $(RESGEN)
	@[ -n "$(S)$(filter-out specs/studies/.yaml,$(STUDY))" ] || { echo "usage: make study-submit S=NAME (specs/studies/NAME.yaml), or STUDY=FILE; RESULTS=DIR; STUDY_THREADS=T; STUDY_RANKS=N"; exit 2; }
	@$(RESGEN) study plan '$(STUDY)' -o '$(BUILD)/study/$(STUDY_NAME)'
	@tools/run-study --check $(study_arguments)
	@$(MAKE) --no-print-directory $(SUB_JOBS) study-binaries STUDY='$(STUDY)'
	@RESGEN_VERSION='$(RESGEN_VERSION)' RESGEN_STUDY_MPI_BIN_DIR='$(study_mpi_bin)' \
		tools/slurm-study submit $(STUDY_THREADS) $(STUDY_RANKS) $(study_arguments)

study-status: $(RESGEN)
	@[ -n "$(S)$(filter-out specs/studies/.yaml,$(STUDY))" ] || { echo "usage: make study-status S=NAME, or STUDY=FILE; RESULTS=DIR"; exit 2; }
	@$(RESGEN) study plan '$(STUDY)' -o '$(BUILD)/study/$(STUDY_NAME)'
	@tools/slurm-study status $(study_arguments)

study-cancel: $(RESGEN)
	@[ -n "$(S)$(filter-out specs/studies/.yaml,$(STUDY))" ] || { echo "usage: make study-cancel S=NAME, or STUDY=FILE; RESULTS=DIR"; exit 2; }
	@$(RESGEN) study plan '$(STUDY)' -o '$(BUILD)/study/$(STUDY_NAME)'
	@tools/slurm-study cancel $(study_arguments)

study-report: $(RESGEN)
	@[ -n "$(S)$(filter-out specs/studies/.yaml,$(STUDY))" ] || { echo "usage: make study-report S=NAME, or STUDY=FILE; RESULTS=DIR"; exit 2; }
	@$(RESGEN) study plan '$(STUDY)' -o '$(BUILD)/study/$(STUDY_NAME)'
	@RESGEN_VERSION='$(RESGEN_VERSION)' tools/run-study --finish $(study_arguments)

# Each binary once: variants that differ in run-time settings alone share
# one (the plan's sixth word), given --set; the MPI flavour for STUDY_RANKS,
# and for the variants whose own ranks (the plan's resources lines) are
# more than one.
study_plan_awk = $(if $(filter study-binaries,$(MAKECMDGOALS)),$(sort $(shell \
	awk '$(1)' '$(BUILD)/study/$(STUDY_NAME)/plan' 2>/dev/null)))
study-binaries: $(patsubst %,$(study_bin)/%,$(call study_plan_awk,$$1 == "variant" { print $$7 })) \
	$(patsubst %,$(study_mpi_bin)/%,$(call study_plan_awk,$$1 == "variant" { binary[$$2] = $$7 } \
		$$1 == "resources" && $$4 != "-" && $$4 > 1 { print binary[$$2] }))

# A binary whose network is its spec's (the plan's "reuse BINARY SPEC") is
# that spec's binary, linked: a study of run-time settings compiles nothing
# that make built before.
study_reused = $(if $(filter study-binaries,$(MAKECMDGOALS)),$(shell \
	sed -n 's/^reuse \([a-z0-9-]*\) \([a-z0-9/-]*\)$$/\1:\2/p' '$(BUILD)/study/$(STUDY_NAME)/plan' 2>/dev/null))
define reuse_binary
$(BUILD)/bin/$(3)study/$(STUDY_NAME)/$(1): $(BUILD)/bin/$(3)$(2)
	@echo "  REUSE $$< as $$@ (the same network)"
	$(Q)mkdir -p $$(@D) && ln -f $$< $$@ 2>/dev/null || cp -f $$< $$@
endef
$(foreach pair,$(study_reused),$(foreach flavour,/ mpi/,$(eval $(call reuse_binary,$(word 1,$(subst :, ,$(pair))),$(word 2,$(subst :, ,$(pair))),$(filter-out /,$(flavour))))))

# ---- benchmark -----------------------------------------------------------------

# For each network of BENCH: resgen's training steps with their time split
# by kind of kernel, the same steps through train (data included), then
# PyTorch training the same network from the same weights in the same run,
# taking turns for BENCH_ROUNDS rounds, each read at its best round; and the
# ratios of speed and peak memory; first the machine's FMA limit, measured
# now; BENCH_SCALING's network also runs on one thread in each round. The paper's
# ResNet-1001 runs at batch 16 (BENCH_BATCH_NAME sets a batch, BENCH_STEPS_NAME
# the timed steps: 4 unless set; fewer and the machine's noise shows).
# PyTorch's tensors are channels-last, which oneDNN trained faster here;
# BENCH_PYTORCH_LAYOUT=nchw times its default layout instead.
BENCH ?= preact-110 original-110 preact-164 paper/t4-c10-preact-1001 resnet-50 \
	bench/preact-110-bf16 bench/preact-110-bf16-pairs bench/preact-164-bf16 bench/preact-164-bf16-pairs \
	bench/resnet-50-bf16 bench/resnet-50-bf16-pairs
BENCH_SCALING ?= preact-110
BENCH_ROUNDS ?= 2
BENCH_PYTORCH_LAYOUT ?= channels-last
BENCH_BATCH_paper/t4-c10-preact-1001 := 16
BENCH_BATCH_resnet-50 := 32
BENCH_STEPS_resnet-50 := 3
# the bf16 rows (specs/bench/), after the f32 networks they are read against
BENCH_BATCH_bench/resnet-50-bf16 := 32
BENCH_STEPS_bench/resnet-50-bf16 := 3
BENCH_BATCH_bench/resnet-50-bf16-pairs := 32
BENCH_STEPS_bench/resnet-50-bf16-pairs := 3
bench_batch = $(or $(BENCH_BATCH_$(1)),128)
bench_steps = $(or $(BENCH_STEPS_$(1)),4)
# Then BENCH_SHARED's networks beside BENCH_LOOPS busy loops each
# (tests/run-bench-shared): every core's threads against one, resgen and
# PyTorch alike. BENCH_SHARED= skips these rounds.
BENCH_SHARED ?= demo preact-110
BENCH_LOOPS ?= 1 3
BENCH_BATCH_demo := 64
BENCH_STEPS_demo := 10

# A bf16 row (bench/NAME-bf16, bench/NAME-bf16-pairs) takes turns with its
# f32 twin NAME's kernels, where specs/NAME.yaml is there: bench_twin_of
# names it (nothing for an f32 row), and run-bench reads it from the row.
bench_twin = $(patsubst bench/%,%,$(patsubst %-bf16,%,$(patsubst %-bf16-pairs,%,$(1))))
bench_twin_of = $(if $(filter-out $(1),$(call bench_twin,$(1))),$(if $(wildcard specs/$(call bench_twin,$(1)).yaml),$(call bench_twin,$(1))))
bench_twins = $(foreach n,$(BENCH),$(call bench_twin_of,$(n)))

# It writes results/speed/latest.md from the run (tests/bench-latest).
bench: $(BUILD)/bench/fma-peak $(BUILD)/bench/bench-loader $(BUILD)/bench/images/train $(foreach n,$(sort $(BENCH) $(BENCH_SHARED)),$(BUILD)/bin/$(n) $(BUILD)/bench/bench-$(n)) \
		$(foreach n,$(sort $(bench_twins)),$(BUILD)/bench/bench-$(n))
	@{ PYTORCH_LAYOUT=$(BENCH_PYTORCH_LAYOUT) tests/run-bench $(BUILD) "$(BENCH_SCALING)" $(BENCH_ROUNDS) \
		$(foreach n,$(BENCH),$(n):$(call bench_batch,$(n)):$(call bench_steps,$(n))$(addprefix :,$(call bench_twin_of,$(n)))); \
		echo $$? >$(BUILD)/bench/status; } 2>&1 | tee $(BUILD)/bench/output.txt; exit $$(cat $(BUILD)/bench/status)
	@$(if $(strip $(BENCH_SHARED)),{ tests/run-bench-shared $(BUILD) $(BENCH_ROUNDS) "$(BENCH_LOOPS)" \
		$(BENCH_PYTORCH_LAYOUT) $(foreach n,$(BENCH_SHARED),$(n):$(call bench_batch,$(n)):$(call bench_steps,$(n))); \
		echo $$? >$(BUILD)/bench/status; } 2>&1 | tee -a $(BUILD)/bench/output.txt; exit $$(cat $(BUILD)/bench/status),:)
	@$(BUILD)/bench/bench-loader $(BUILD)/bench/images 224 2000 | tee -a $(BUILD)/bench/output.txt
	@tests/bench-latest $(BUILD) $(BUILD)/bench/output.txt '$(RESGEN_VERSION)'

# make bench-mpi: one process of two threads against two ranks of one
# thread (mpirun --bind-to core), and the cost of the gradient sums.
BENCH_MPI ?= preact-110 preact-164
BENCH_MPI_STEPS ?= 4

bench-mpi: $(foreach n,$(BENCH_MPI),$(BUILD)/bin/$(n) $(BUILD)/bin/mpi/$(n))
	@mkdir -p $(BUILD)/bench
	@tests/run-bench-mpi $(BUILD) $(BENCH_MPI_STEPS) $(BENCH_MPI)

# make bench-march: what the default build (instruction sets chosen at
# run time) costs against one for BENCH_MARCH (native: this machine's),
# and its speed as an AVX2 node runs it (docs/cluster.md).
BENCH_MARCH ?= native
BENCH_MARCH_NAMES ?= preact-110
BENCH_MARCH_STEPS ?= 4

bench-march: $(foreach n,$(BENCH_MARCH_NAMES),$(BUILD)/bin/$(n))
	@$(MAKE) --no-print-directory MARCH=$(BENCH_MARCH) BUILD=$(BUILD)/march-$(BENCH_MARCH) \
		$(foreach n,$(BENCH_MARCH_NAMES),$(BUILD)/march-$(BENCH_MARCH)/bin/$(n))
	@mkdir -p $(BUILD)/bench
	@tests/run-bench-march $(BUILD) $(BUILD)/march-$(BENCH_MARCH) $(BENCH_MARCH) $(BENCH_ROUNDS) $(BENCH_MARCH_STEPS) \
		$(BENCH_MARCH_NAMES)

# make bench-bf16: the bf16 paths' rates against the f32 GEMM, one thread
# (tests/bench_bf16.c; results/speed/bf16-kernels.md).
$(BUILD)/bench/bench-bf16: tests/bench_bf16.c $(BUILD)/obj/f32/bf16.o $(BUILD)/obj/f32/gemm.o \
		$(BUILD)/obj/f32/machine.o $(BUILD)/obj/f32/profile.o $(BUILD)/obj/f32/threads.o $(BUILD)/obj/f32/printable.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(RUNTIME_CFLAGS) -o $@ $^ $(LDFLAGS_ALL) $(RUNTIME_LIBS)

bench-bf16: $(BUILD)/bench/bench-bf16
	@$< $(BENCH_ROUNDS)

# The data loader's rate on a generated folder of JPEGs of ImageNet's sizes.
$(BUILD)/bench/bench-loader: tests/bench_loader.c $(BUILD)/obj/f32/image_folder.o $(BUILD)/obj/f32/resize.o \
		$(BUILD)/obj/f32/rng.o $(BUILD)/obj/f32/printable.o $(BUILD)/obj/f32/file_replace.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(RUNTIME_CFLAGS) -o $@ $^ $(LDFLAGS_ALL) -lturbojpeg -lstb -lm

$(BUILD)/bench/images/train: tests/images/make_folder.py
	@mkdir -p $(@D)
	$(call say,GEN,$(@D))
	$(Q)rm -rf $(@D) && /usr/bin/python3 $< $(@D) --classes 10 --train 40 --val 1 --imagenet-sizes

$(BUILD)/bench/fma-peak: tests/fma_peak.c runtime/machine/machine.c runtime/machine/machine.h runtime/machine/bf16.c runtime/machine/gemm.c runtime/machine/gemm.h runtime/machine/profile.h \
		runtime/shared/printable.c runtime/shared/printable.h
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) -O2 -march=native -ffp-contract=fast -fopenmp -D_GNU_SOURCE $(WARNINGS) -Iruntime -Iruntime/machine -Iruntime/shared -o $@ $(filter %.c,$^) $(RUNTIME_LIBS)

$(BUILD)/bench/bench-%: tests/bench.c $(BUILD)/obj/net/%.o $(RUNTIME_F32)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(RUNTIME_CFLAGS) -o $@ $^ $(LDFLAGS_ALL) $(RUNTIME_LIBS)

# ---- fuzzing ------------------------------------------------------------------
# Under libFuzzer with ASan + UBSan, each from a corpus of the shipped
# files: the spec loader, graph and plan (stages 1 to 3), and the study
# reader with the plan and variant specs that make and run-study read;
# the image files of a folder of images, decoded and cropped; then
# resgen_torch.py's weights reader against the binaries' (seeded by
# tiny-f64's initial weights; tests/fuzz/fuzz_weights.py). FUZZ_SECONDS
# is the whole run's, split between the four; make test gives it 60
# seconds.

FUZZ_SECONDS ?= 600
FUZZ_TARGETS := spec study image
FUZZ_SOURCES := $(filter-out generator/main.c generator/stage4-emit/emit.c,$(GENERATOR_SOURCES)) \
	$(SHARED_RUNTIME:%=runtime/shared/%.c)
FUZZ_CFLAGS := -std=gnu11 -g -O1 -D_GNU_SOURCE -Wall -Wextra -Werror $(addprefix -I,$(GENERATOR_DIRS)) -Iruntime -Iruntime/shared \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined

$(BUILD)/fuzz/fuzz-%: tests/fuzz/fuzz_%.c $(FUZZ_SOURCES) $(foreach d,$(GENERATOR_DIRS),$(wildcard $(d)/*.h))
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)clang $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_SOURCES) -lyaml -lm

# The image reader: any bytes as a file of a folder of images, decoded and
# cropped (tests/fuzz/fuzz_image.c), from small files of every kind and
# the inputs that once failed it (tests/fuzz/image-crashes/).
FUZZ_IMAGE_SOURCES := runtime/data/image_folder.c runtime/data/resize.c runtime/shared/rng.c runtime/shared/printable.c \
	runtime/shared/file_replace.c
$(BUILD)/fuzz/fuzz-image: tests/fuzz/fuzz_image.c $(FUZZ_IMAGE_SOURCES) runtime/data/image_folder.h runtime/data/resize.h
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)clang $(FUZZ_CFLAGS) -Iruntime/data -o $@ $< $(FUZZ_IMAGE_SOURCES) -lturbojpeg -lstb -lm

FUZZ_SEEDS_spec := specs/*.yaml specs/paper/*.yaml tests/specs/*.yaml tests/specs/grad/*.yaml tests/golden/*.yaml
FUZZ_SEEDS_study := specs/studies/*.yaml tests/studies/*.yaml

$(BUILD)/fuzz/tensor-check: tests/fuzz/tensor_check.c $(BUILD)/obj/f64/tensor_file.o $(BUILD)/obj/f64/file_replace.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(RUNTIME_CFLAGS) -DRESGEN_F64 -o $@ $^ $(LDFLAGS_ALL) -lz -lm

fuzz: $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz-%) $(BUILD)/fuzz/tensor-check $(BUILD)/tests/bin/tiny-f64
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(BUILD)/fuzz/$$t/corpus $(BUILD)/fuzz/$$t/seeds || exit 1; \
	done
	@cp $(FUZZ_SEEDS_spec) $(BUILD)/fuzz/spec/seeds/
	@cp $(FUZZ_SEEDS_study) $(BUILD)/fuzz/study/seeds/
	@/usr/bin/python3 tests/fuzz/image_seeds.py $(BUILD)/fuzz/image/seeds
	@cp tests/fuzz/image-crashes/* $(BUILD)/fuzz/image/seeds/
	@seconds=$$(( $(FUZZ_SECONDS) / $(words $(FUZZ_TARGETS) weights) )); \
	for t in $(FUZZ_TARGETS); do \
	  echo "fuzzing the $$t reader for $$seconds s (log: $(BUILD)/fuzz/$$t/log)"; \
	  $(BUILD)/fuzz/fuzz-$$t -max_total_time=$$seconds -dict=tests/fuzz/$$t.dict \
		-max_len=4096 -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
		-artifact_prefix=$(BUILD)/fuzz/$$t/ $(BUILD)/fuzz/$$t/corpus $(BUILD)/fuzz/$$t/seeds \
		> $(BUILD)/fuzz/$$t/log 2>&1 || { tail -40 $(BUILD)/fuzz/$$t/log; exit 1; }; \
	  grep -E "^#[0-9]+[[:space:]]+DONE" $(BUILD)/fuzz/$$t/log | tail -1 | \
		sed -E "s/^#([0-9]+).*cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+).*/fuzz $$t: \1 inputs, coverage \2 edges, \3 features, corpus \4 inputs: no crash, leak or undefined behaviour/"; \
	done; \
	mkdir -p $(BUILD)/fuzz/weights && \
	$(BUILD)/tests/bin/tiny-f64 init --save-weights $(BUILD)/fuzz/weights/seed > /dev/null && \
	echo "fuzzing resgen_torch.py's weights reader for $$seconds s" && \
	/usr/bin/python3 tests/fuzz/fuzz_weights.py $$seconds $(BUILD)/fuzz/tensor-check $(BUILD)/fuzz/weights \
		$(BUILD)/fuzz/weights/seed

include tests/tests.mk

clean:
	rm -rf build generated

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
