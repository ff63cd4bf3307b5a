# The test suite (included by the Makefile). Three layers: unit tests of the
# generator's modules, golden emitted text, and numerical tests of emitted
# networks (finite differences in f64; f32 against f64); plus the binaries'
# behaviour on real and broken data.

TEST_BIN := $(BUILD)/tests
GRAD_NAMES := $(patsubst tests/specs/grad/%.yaml,%,$(wildcard tests/specs/grad/*.yaml))
GRADCHECKS := $(GRAD_NAMES:%=$(TEST_BIN)/gradcheck-%)

# Emitted code of a test spec, in either precision: $(BUILD)/generated/SPEC-DTYPE/
$(BUILD)/generated/grad-%-f64/net.c: tests/specs/grad/%.yaml $(RESGEN) $(TEMPLATES)
	$(call say,GEN,$<)
	$(Q)$(RESGEN) generate $< -o $(@D) --dtype f64

$(BUILD)/generated/%-f64/net.c: tests/specs/%.yaml $(RESGEN) $(TEMPLATES)
	$(call say,GEN,$<)
	$(Q)$(RESGEN) generate $< -o $(@D) --dtype f64

$(BUILD)/generated/%-f32/net.c: tests/specs/%.yaml $(RESGEN) $(TEMPLATES)
	$(call say,GEN,$<)
	$(Q)$(RESGEN) generate $< -o $(@D) --dtype f32

$(eval $(call network_rules,$(BUILD)/obj/tests/%-f64.o,$(BUILD)/obj/parts/tests/%-f64,$(BUILD)/generated/%-f64,-DRESGEN_F64))
$(eval $(call network_rules,$(BUILD)/obj/tests/%-f32.o,$(BUILD)/obj/parts/tests/%-f32,$(BUILD)/generated/%-f32,))

# The gradient checks' networks and test_kernels call the kernel library
# compiled once (-DRESGEN_OUT_OF_LINE, linking kernel_library.o), as the
# sanitizer build does: the same code at -O3, without a copy in every
# network, so that a network compiles in about two seconds (docs/build.md).
# test_kernels gives the kernels shapes at run time either way. The
# instances inlined as users build them run in test_train (tiny-f32, a
# bottleneck pre-activation network, against tiny-f64; the demo, a basic
# one) and in make bench.
CHECK_NET_CFLAGS := $(NET_BASE_CFLAGS) -DRESGEN_OUT_OF_LINE

# Test networks whose tests are about what they read, write or share, not
# their speed, compile the same way: ranks-sync (test_ranks), tiny-cifar and
# fashion-tiny (the data sets, test_train and test_refusals), the demo in
# bf16 in either order (test_precision: bf16's convolutions run the
# reference kernels, which inlining does not change),
# fashion-tiny-f64 for the check of evaluate and the export, ResNet-50 at
# 64x64 fine-tuned to 6 classes (test_fine_tune), the folder normalised by
# its own statistics (photos-own, test_images), ResNet-18 against
# torchvision (resnet-50-small, inlined, is the check of the kernels as
# users build them), and tiny-f64
# (users' binaries are f32; the f64 build is the tests'). tiny-f32 and the
# demo stay inlined as users build them.
CHECK_NETS := ranks-sync tiny-cifar fashion-tiny demo-bf16 demo-bf16-pairs resnet-50-photos resnet-18-small \
	photos-own
$(foreach n,$(CHECK_NETS),$(BUILD)/obj/tests/$(n)-f32.o $(BUILD)/obj/tests/$(n)-f64.o) $(BUILD)/obj/tests/tiny-f64.o: \
	NET_CFLAGS := $(CHECK_NET_CFLAGS)

$(eval $(call network_rules,$(BUILD)/obj/tests/grad-%-f64.o,$(BUILD)/obj/parts/tests/grad-%-f64,$(BUILD)/generated/grad-%-f64,-DRESGEN_F64))
$(BUILD)/obj/tests/grad-%-f64.o: NET_CFLAGS := $(CHECK_NET_CFLAGS)

$(TEST_BIN)/gradcheck-%: tests/test_gradcheck.c $(BUILD)/obj/tests/grad-%-f64.o $(RUNTIME_F64) $(KERNEL_LIBRARY_F64)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(RUNTIME_CFLAGS) -DRESGEN_F64 -o $@ $(filter %.c %.o,$^) $(LDFLAGS_ALL) -lcmocka $(RUNTIME_LIBS)

# The tests' hooks into the training loop (tests/hooks.c), which the
# binaries of the tests link and users' binaries do not.
$(BUILD)/obj/f32/hooks.o: tests/hooks.c
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(RUNTIME_CFLAGS) -c $< -o $@

$(BUILD)/obj/f64/hooks.o: tests/hooks.c
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(RUNTIME_CFLAGS) -DRESGEN_F64 -c $< -o $@

# Whole binaries of test specs, as users get them but for the hooks, in
# both precisions.
$(TEST_BIN)/bin/%-f64: $(BUILD)/obj/tests/%-f64.o $(BUILD)/obj/f64/main.o $(RUNTIME_F64) $(KERNEL_LIBRARY_F64) \
		$(BUILD)/obj/f64/hooks.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(RUNTIME_LIBS)

$(TEST_BIN)/bin/%-f32: $(BUILD)/obj/tests/%-f32.o $(BUILD)/obj/f32/main.o $(RUNTIME_F32) $(KERNEL_LIBRARY_F32) \
		$(BUILD)/obj/f32/hooks.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(RUNTIME_LIBS)

# Their Open MPI flavour (ranks_mpi.o for ranks.o), for test_ranks.
$(TEST_BIN)/bin/mpi/%-f64: $(BUILD)/obj/tests/%-f64.o $(BUILD)/obj/f64/main.o $(MPI_RUNTIME_F64) $(KERNEL_LIBRARY_F64) \
		$(BUILD)/obj/f64/hooks.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(RUNTIME_LIBS) $(MPI_LIBS)

GENERATOR_LIBRARY := $(filter-out $(BUILD)/obj/generator/main.o,$(GENERATOR_OBJECTS))

$(TEST_BIN)/test_%: tests/test_%.c $(GENERATOR_LIBRARY)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(GENERATOR_CFLAGS) -o $@ $(filter %.c %.o,$^) $(LDFLAGS_ALL) -lcmocka -lyaml -lm

# The system tests: the binaries, resgen and make run as users run them.
$(TEST_BIN)/test_train $(TEST_BIN)/test_refusals $(TEST_BIN)/test_process $(TEST_BIN)/test_study_runs \
		$(TEST_BIN)/test_slurm_tools $(TEST_BIN)/test_startup \
		$(TEST_BIN)/test_evaluate $(TEST_BIN)/test_outputs \
		$(TEST_BIN)/test_explain $(TEST_BIN)/test_cluster $(TEST_BIN)/test_isa $(TEST_BIN)/test_torch_tool \
		$(TEST_BIN)/test_fine_tune: $(TEST_BIN)/test_%: tests/test_%.c tests/command.c \
		tests/command.h \
		$(BUILD)/obj/f64/tensor_file.o $(BUILD)/obj/f64/file_replace.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(RUNTIME_CFLAGS) -DRESGEN_F64 -o $@ $(filter %.c %.o,$^) $(LDFLAGS_ALL) -lcmocka -lz -lm

# The data room's door and sources (runtime/data/), which test_images links.
DATA_SOURCES := data $(patsubst runtime/data/%.c,%,$(wildcard runtime/data/source_*.c))

# Folders of images: the crops it draws (image_folder.o's own), each
# image's augmentation keyed (data.o), and the binaries on a generated
# folder.
$(TEST_BIN)/test_images: tests/test_images.c tests/command.c tests/command.h $(BUILD)/obj/f64/image_folder.o \
		$(DATA_SOURCES:%=$(BUILD)/obj/f64/%.o) $(BUILD)/obj/f64/data_sets.o $(BUILD)/obj/f64/resize.o $(BUILD)/obj/f64/rng.o $(BUILD)/obj/f64/printable.o $(BUILD)/obj/f64/tensor_file.o \
		$(BUILD)/obj/f64/file_replace.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(RUNTIME_CFLAGS) -DRESGEN_F64 -o $@ $(filter %.c %.o,$^) $(LDFLAGS_ALL) -lcmocka -lturbojpeg -lstb -lz -lm

$(TEST_BIN)/test_ranks: tests/test_ranks.c $(BUILD)/obj/f64/tensor_file.o $(BUILD)/obj/f64/file_replace.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(RUNTIME_CFLAGS) -DRESGEN_F64 -o $@ $(filter %.c %.o,$^) $(LDFLAGS_ALL) -lcmocka -lz -lm

# The rooms of runtime/: no include runs up a room (docs/build.md).
$(TEST_BIN)/test_rooms: tests/test_rooms.c
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(RUNTIME_CFLAGS) -o $@ $^ $(LDFLAGS_ALL) -lcmocka

$(TEST_BIN)/test_file_replace: tests/test_file_replace.c $(BUILD)/obj/f64/file_replace.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(RUNTIME_CFLAGS) -o $@ $^ $(LDFLAGS_ALL) -lcmocka

# The fast kernels against the reference kernels, in both precisions, from
# the kernel library (runtime/kernels/) with shapes given at run time.
$(TEST_BIN)/test_kernels-%: tests/test_kernels.c $(BUILD)/obj/%/kernel_library.o $(BUILD)/obj/%/gemm.o \
		$(BUILD)/obj/%/profile.o $(BUILD)/obj/%/machine.o $(BUILD)/obj/%/threads.o $(BUILD)/obj/%/printable.o $(BUILD)/obj/%/bf16.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(CHECK_NET_CFLAGS) $(if $(filter f64,$*),-DRESGEN_F64) -Wno-unused-function -o $@ $(filter %.c %.o,$^) \
		$(LDFLAGS_ALL) -lcmocka $(RUNTIME_LIBS)

# bf16 networks trained on every path (test_precision), which asks bf16.o
# which paths this processor has.
$(TEST_BIN)/test_precision: tests/test_precision.c tests/command.c tests/command.h $(BUILD)/obj/f32/bf16.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(RUNTIME_CFLAGS) -o $@ $(filter %.c %.o,$^) $(LDFLAGS_ALL) -lcmocka -lm

# bf16 products summed in f32: every path this processor has against the
# plain definition, bit for bit (runtime/machine/bf16.h).
$(TEST_BIN)/test_bf16: tests/test_bf16.c $(BUILD)/obj/f32/bf16.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(RUNTIME_CFLAGS) -o $@ $^ $(LDFLAGS_ALL) -lcmocka -lm

KERNEL_TESTS := $(TEST_BIN)/test_kernels-f32 $(TEST_BIN)/test_kernels-f64 $(TEST_BIN)/test_bf16

UNIT_TESTS := $(TEST_BIN)/test_spec $(TEST_BIN)/test_study $(TEST_BIN)/test_template $(TEST_BIN)/test_graph \
	$(TEST_BIN)/test_file_replace $(TEST_BIN)/test_rooms
SYSTEM_TESTS := $(TEST_BIN)/test_golden $(TEST_BIN)/test_train $(TEST_BIN)/test_refusals $(TEST_BIN)/test_process \
	$(TEST_BIN)/test_study_runs $(TEST_BIN)/test_slurm_tools \
	$(TEST_BIN)/test_startup $(TEST_BIN)/test_evaluate $(TEST_BIN)/test_outputs $(TEST_BIN)/test_explain \
	$(TEST_BIN)/test_ranks $(TEST_BIN)/test_images $(TEST_BIN)/test_torch_tool $(TEST_BIN)/test_precision \
	$(TEST_BIN)/test_fine_tune
SYSTEM_TEST_NEEDS := $(RESGEN) $(BUILD)/bin/demo $(TEST_BIN)/bin/tiny-f32 $(TEST_BIN)/bin/tiny-f64 \
	$(TEST_BIN)/bin/demo-bf16-f32 $(TEST_BIN)/bin/demo-bf16-pairs-f32 \
	$(TEST_BIN)/bin/photos-f32 $(TEST_BIN)/bin/photos-f64 $(TEST_BIN)/bin/resnet-50-photos-f32 \
	$(TEST_BIN)/bin/photos-own-f32 \
	$(TEST_BIN)/bin/tiny-cifar-f32 $(TEST_BIN)/bin/fashion-tiny-f32 $(TEST_BIN)/bin/tiny-edited-f64 \
	$(TEST_BIN)/bin/ranks-sync-f64 $(TEST_BIN)/bin/mpi/ranks-sync-f64 $(TEST_BIN)/bin/mpi/tiny-f64

# For the test that a checkpoint resumes in a binary of another version
# with the same network: tiny-f64's network with another version string.
# (What a kernel library's text changes is not the network's identity:
# test_refusals's test_identity_is_what_the_network_computes.)
$(BUILD)/obj/edited/version.o: runtime/run/version.c
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(RUNTIME_CFLAGS) -DRESGEN_F64 -DRESGEN_VERSION='"edited-by-the-test"' -c $< -o $@

$(TEST_BIN)/bin/tiny-edited-f64: $(BUILD)/obj/tests/tiny-f64.o $(BUILD)/obj/f64/main.o \
		$(filter-out %/version.o,$(RUNTIME_F64)) $(KERNEL_LIBRARY_F64) $(BUILD)/obj/edited/version.o $(BUILD)/obj/f64/hooks.o
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(RUNTIME_LIBS)

# The PyTorch check (tests/reference/): specs written by specs.py, an f64
# binary for each and an f32 binary for those in f32.list, then reference.py
# runs them against its own implementation. Their networks are compiled at
# -O0 without debug information and call the kernel library (out of line,
# at -O3, as the gradient checks): the cheapest to compile, and the check
# is about what they compute; the binaries' tests run the same kernels
# inlined, as users build them.
REFERENCE_SPECS = $(wildcard $(BUILD)/reference/specs/*.yaml)
REFERENCE_F32 = $(shell cat $(BUILD)/reference/specs/f32.list 2>/dev/null)
REFERENCE_BINARIES = $(patsubst $(BUILD)/reference/specs/%.yaml,$(TEST_BIN)/reference/%-f64,$(REFERENCE_SPECS)) \
	$(REFERENCE_F32:%=$(TEST_BIN)/reference/%-f32)
reference_binaries_of = $(TEST_BIN)/reference/$(1)-f64$(if $(filter $(1),$(REFERENCE_F32)),$(comma)$(TEST_BIN)/reference/$(1)-f32)
comma := ,
REFERENCE_PAIRS = $(foreach spec,$(REFERENCE_SPECS),$(spec)=$(call reference_binaries_of,$(basename $(notdir $(spec)))))
REFERENCE_CFLAGS := $(filter-out $(DEBUG),$(RUNTIME_CFLAGS:$(OPTIMISE)=-O0)) -DRESGEN_OUT_OF_LINE

$(BUILD)/generated/reference/%-f32/net.c: $(BUILD)/reference/specs/%.yaml $(RESGEN) $(TEMPLATES)
	$(call say,GEN,$<)
	$(Q)$(RESGEN) generate $< -o $(@D) --dtype f32

$(BUILD)/generated/reference/%-f64/net.c: $(BUILD)/reference/specs/%.yaml $(RESGEN) $(TEMPLATES)
	$(call say,GEN,$<)
	$(Q)$(RESGEN) generate $< -o $(@D) --dtype f64

$(TEST_BIN)/reference/%-f64: $(BUILD)/generated/reference/%-f64/net.c $(BUILD)/obj/f64/main.o $(RUNTIME_F64) $(KERNEL_LIBRARY_F64)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(REFERENCE_CFLAGS) -DRESGEN_F64 -DNET_KERNELS=net_kernels_march -I$(<D) -o $@ $(filter %.c %.o,$^) $(<D)/kernels.c \
		$(LDFLAGS_ALL) $(RUNTIME_LIBS)

$(TEST_BIN)/reference/%-f32: $(BUILD)/generated/reference/%-f32/net.c $(BUILD)/obj/f32/main.o $(RUNTIME_F32) $(KERNEL_LIBRARY_F32)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(REFERENCE_CFLAGS) -DNET_KERNELS=net_kernels_march -I$(<D) -o $@ $(filter %.c %.o,$^) $(<D)/kernels.c \
		$(LDFLAGS_ALL) $(RUNTIME_LIBS)

test-reference:
	@mkdir -p $(BUILD)/reference
	$(Q)/usr/bin/python3 tests/reference/specs.py $(BUILD)/reference/specs
	@$(MAKE) --no-print-directory $(SUB_JOBS) reference-binaries
	@$(MAKE) --no-print-directory reference-run
	@$(MAKE) --no-print-directory $(SUB_JOBS) reference-evaluate
	@$(MAKE) --no-print-directory $(SUB_JOBS) reference-torchvision

reference-binaries: $(REFERENCE_BINARIES)

# ResNet-50 and ResNet-18 against torchvision's resnet50 and resnet18
# (tests/reference/torchvision_check.py): float64 steps with every
# gradient, the float32 export loaded outside the repository, and
# torchvision's weights imported.
TORCHVISION_NETS := resnet-50-small resnet-18-small
reference-torchvision: $(foreach n,$(TORCHVISION_NETS),$(TEST_BIN)/bin/$(n)-f64 $(TEST_BIN)/bin/$(n)-f32) $(RESGEN)
	$(Q)for n in $(TORCHVISION_NETS); do \
	  echo "torchvision check: $$n (tests/reference/torchvision_check.py)"; \
	  RESGEN=$(RESGEN) /usr/bin/python3 tests/reference/torchvision_check.py $(BUILD)/reference tests/specs/$$n.yaml \
		$(TEST_BIN)/bin/$$n-f64 $(TEST_BIN)/bin/$$n-f32 || exit 1; \
	 done

# The binaries' evaluate and the export of tools/pytorch/ against PyTorch,
# on real Fashion-MNIST (tests/reference/evaluate.py).
reference-evaluate: $(TEST_BIN)/bin/fashion-tiny-f64 $(RESGEN)
	@echo "PyTorch check of evaluate and the export: fashion-tiny (tests/reference/evaluate.py)"
	$(Q)RESGEN=$(RESGEN) /usr/bin/python3 tests/reference/evaluate.py $(BUILD)/reference tests/specs/fashion-tiny.yaml $<

reference-run:
	@echo "PyTorch check: $(words $(REFERENCE_SPECS)) specs against float64 PyTorch (tests/reference/)"
	$(Q)RESGEN=$(RESGEN) /usr/bin/python3 tests/reference/reference.py $(BUILD)/reference $(REFERENCE_PAIRS)

# The test programs run one at a time: two OpenMP programs on two cores
# slow each other many times over (results/test-times.md). Beside them,
# the fuzzers' build and then the fuzzers (one core for a minute) take the
# core they leave idle.
# test-cluster's program mostly waits for Slurm: the PyTorch check and the
# sanitizer build run beside it (a job slot more than the cores), and its
# output is printed whole when it ends (-Otarget).
test:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory $(SUB_JOBS) test-programs
	@$(MAKE) --no-print-directory $(call sub_jobs,2) test-plain fuzz FUZZ_SECONDS=60
	@$(MAKE) --no-print-directory $(call sub_jobs,$$(( $(JOBS) + 1 ))) -Otarget \
		test-cluster test-beside-cluster
	@$(MAKE) --no-print-directory $(SUB_JOBS) test-sanitize

# The PyTorch check, then the sanitizer's build.
test-beside-cluster:
	@$(MAKE) --no-print-directory test-reference
	@$(MAKE) --no-print-directory test-programs-sanitize

# The sanitizer build: its own folder, so that the plain one stays.
SANITIZED := SANITIZE=1 BUILD=build/sanitize

test-programs-sanitize:
	@$(MAKE) --no-print-directory $(SUB_JOBS) test-programs $(SANITIZED)

# make check: the quick tier for the edit loop. The generator's unit tests,
# the goldens, the kernels against their references, the gradient checks
# of the two orderings that bracket the paper (original and full
# pre-activation, basic and bottleneck) and the hostile-input tests of the
# binaries; make test runs all of it and more.
CHECK_GRADCHECKS := $(patsubst %,$(TEST_BIN)/gradcheck-%,original-basic-conv1x1 full-preact-basic-zero-pad \
	full-preact-bottleneck-conv1x1 original-bottleneck-zero-pad)
CHECK_TESTS := $(UNIT_TESTS) $(TEST_BIN)/test_golden $(KERNEL_TESTS) $(CHECK_GRADCHECKS) $(TEST_BIN)/test_refusals \
	$(TEST_BIN)/test_slurm_tools $(TEST_BIN)/test_startup $(TEST_BIN)/test_evaluate $(TEST_BIN)/test_outputs \
	$(TEST_BIN)/test_explain

check:
	@$(MAKE) --no-print-directory $(SUB_JOBS) check-plain

check-plain: $(CHECK_TESTS) $(RESGEN) $(BUILD)/bin/demo $(TEST_BIN)/bin/tiny-f32 $(TEST_BIN)/bin/tiny-f64 $(TEST_BIN)/bin/fashion-tiny-f32 \
		$(TEST_BIN)/bin/tiny-cifar-f32
	@BUILD=$(BUILD) tests/run-all $(CHECK_TESTS)

# make test-cluster: a study on a real one-node Slurm that the test starts
# and stops (tests/slurm/cluster), as root; once, in the plain build.
test-cluster: $(TEST_BIN)/test_cluster $(RESGEN) $(TEST_BIN)/bin/tiny-f64
	@BUILD=$(BUILD) tests/run-all $(TEST_BIN)/test_cluster

test-sanitize:
	@$(MAKE) --no-print-directory $(SUB_JOBS) test-plain $(SANITIZED)

# The same bits on every path (test_isa): the default build's demo against
# one for this machine alone. Not in the sanitizer's build, whose networks
# call one kernel library, compiled once, on every path.
NATIVE_DEMO := $(BUILD)/march-native/bin/demo
ISA_TEST := $(if $(filter 1,$(SANITIZE)),,$(TEST_BIN)/test_isa)
TEST_PROGRAMS := $(UNIT_TESTS) $(KERNEL_TESTS) $(GRADCHECKS) $(SYSTEM_TESTS) $(ISA_TEST)

native-demo:
	@$(MAKE) --no-print-directory MARCH=native BUILD=$(BUILD)/march-native $(NATIVE_DEMO)

test-programs: $(TEST_PROGRAMS) $(SYSTEM_TEST_NEEDS) $(if $(ISA_TEST),native-demo)

test-plain: test-programs
	@BUILD=$(BUILD) tests/run-all $(TEST_PROGRAMS)

golden: $(RESGEN)
	@for spec in tests/golden/*.yaml; do \
	  name=$$(basename $$spec .yaml); \
	  $(RESGEN) generate $$spec -o tests/golden/$$name || exit 1; \
	  echo "refreshed tests/golden/$$name/"; \
	done

# make dumps DUMPS=DIR: step --dump of the networks whose numbers a change
# of the kernels or their layout must keep bitwise (preact-110,
# original-110 and preact-164 in f32 and f64 at batch 37 on 1 and 2
# threads; ResNet-1001 in f32 at batch 4), on synthetic data, into DIR;
# cmp two such folders to compare.
DUMP_NAMES := preact-110 original-110 preact-164
DUMP_BINARIES := $(DUMP_NAMES:%=$(BUILD)/bin/%) $(DUMP_NAMES:%=$(TEST_BIN)/dumps/%-f64) \
	$(BUILD)/bin/paper/t4-c10-preact-1001

$(BUILD)/generated/dumps/%-f64/net.c: specs/%.yaml $(RESGEN) $(TEMPLATES)
	$(call say,GEN,$<)
	$(Q)$(RESGEN) generate $< -o $(@D) --dtype f64

$(eval $(call network_rules,$(BUILD)/obj/dumps/%-f64.o,$(BUILD)/obj/parts/dumps/%-f64,$(BUILD)/generated/dumps/%-f64,-DRESGEN_F64))

$(TEST_BIN)/dumps/%-f64: $(BUILD)/obj/dumps/%-f64.o $(BUILD)/obj/f64/main.o $(RUNTIME_F64)
	@mkdir -p $(@D)
	$(call say,LINK,$@)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(RUNTIME_LIBS)

dumps: $(DUMP_BINARIES)
	@[ -n "$(DUMPS)" ] || { echo "usage: make dumps DUMPS=DIR"; exit 2; }
	@mkdir -p '$(DUMPS)'
	@for t in 1 2; do \
	  for n in $(DUMP_NAMES); do \
	    $(BUILD)/bin/$$n step --synthetic --batch 37 --threads $$t --dump '$(DUMPS)'/$$n-f32-$$t.dump > /dev/null && \
	    $(TEST_BIN)/dumps/$$n-f64 step --synthetic --batch 37 --threads $$t --dump '$(DUMPS)'/$$n-f64-$$t.dump > /dev/null || exit 1; \
	  done; \
	  $(BUILD)/bin/paper/t4-c10-preact-1001 step --synthetic --batch 4 --threads $$t \
		--dump '$(DUMPS)'/preact-1001-f32-$$t.dump > /dev/null || exit 1; \
	done
	@echo "wrote $$(ls '$(DUMPS)' | wc -l) dumps to $(DUMPS)"
