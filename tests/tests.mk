# The test suite (included by the Makefile). Three layers: unit tests of the
# generator's modules, golden emitted text, and numerical tests of emitted
# networks (finite differences in f64; f32 against f64); plus the binaries'
# behaviour on real and broken data.

TEST_BIN := $(BUILD)/tests
GRAD_NAMES := $(patsubst tests/specs/grad/%.yaml,%,$(wildcard tests/specs/grad/*.yaml))
GRADCHECKS := $(GRAD_NAMES:%=$(TEST_BIN)/gradcheck-%)

# Emitted code of a test spec, in either precision: $(BUILD)/generated/SPEC-DTYPE/
$(BUILD)/generated/grad-%-f64/net.c: tests/specs/grad/%.yaml $(RESGEN) $(TEMPLATES)
	$(RESGEN) generate $< -o $(@D) --dtype f64

$(BUILD)/generated/%-f64/net.c: tests/specs/%.yaml $(RESGEN) $(TEMPLATES)
	$(RESGEN) generate $< -o $(@D) --dtype f64

$(BUILD)/generated/%-f32/net.c: tests/specs/%.yaml $(RESGEN) $(TEMPLATES)
	$(RESGEN) generate $< -o $(@D) --dtype f32

$(BUILD)/obj/tests/%-f64.o: $(BUILD)/generated/%-f64/net.c
	@mkdir -p $(@D)
	$(CC) $(RUNTIME_CFLAGS) -DRESGEN_F64 -I$(<D) -c $< -o $@

$(BUILD)/obj/tests/%-f32.o: $(BUILD)/generated/%-f32/net.c
	@mkdir -p $(@D)
	$(CC) $(RUNTIME_CFLAGS) -I$(<D) -c $< -o $@

$(TEST_BIN)/gradcheck-%: tests/test_gradcheck.c $(BUILD)/obj/tests/grad-%-f64.o $(RUNTIME_F64)
	@mkdir -p $(@D)
	$(CC) $(RUNTIME_CFLAGS) -DRESGEN_F64 -o $@ $(filter %.c %.o,$^) $(LDFLAGS_ALL) -lcmocka $(RUNTIME_LIBS)

# Whole binaries of test specs, as users get them, in both precisions.
$(TEST_BIN)/bin/%-f64: $(BUILD)/obj/tests/%-f64.o $(BUILD)/obj/f64/main.o $(RUNTIME_F64)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(RUNTIME_LIBS)

$(TEST_BIN)/bin/%-f32: $(BUILD)/obj/tests/%-f32.o $(BUILD)/obj/f32/main.o $(RUNTIME_F32)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(RUNTIME_LIBS)

GENERATOR_LIBRARY := $(filter-out $(BUILD)/obj/generator/main.o,$(GENERATOR_OBJECTS))

$(TEST_BIN)/test_%: tests/test_%.c $(GENERATOR_LIBRARY)
	@mkdir -p $(@D)
	$(CC) $(GENERATOR_CFLAGS) -Igenerator -o $@ $(filter %.c %.o,$^) $(LDFLAGS_ALL) -lcmocka -lyaml -lm

$(TEST_BIN)/test_binaries: tests/test_binaries.c $(BUILD)/obj/f64/tensor_file.o
	@mkdir -p $(@D)
	$(CC) $(RUNTIME_CFLAGS) -DRESGEN_F64 -o $@ $(filter %.c %.o,$^) $(LDFLAGS_ALL) -lcmocka -lz -lm

UNIT_TESTS := $(TEST_BIN)/test_spec $(TEST_BIN)/test_template $(TEST_BIN)/test_graph
SYSTEM_TESTS := $(TEST_BIN)/test_golden $(TEST_BIN)/test_binaries
SYSTEM_TEST_NEEDS := $(RESGEN) $(BUILD)/bin/demo $(TEST_BIN)/bin/tiny-f32 $(TEST_BIN)/bin/tiny-f64 \
	$(TEST_BIN)/bin/tiny-cifar-f32 $(TEST_BIN)/bin/fashion-tiny-f32

test:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory test-plain
	@$(MAKE) --no-print-directory test-sanitize

test-sanitize:
	@$(MAKE) --no-print-directory test-plain SANITIZE=1 BUILD=build/sanitize

test-plain: $(UNIT_TESTS) $(GRADCHECKS) $(SYSTEM_TESTS) $(SYSTEM_TEST_NEEDS)
	@BUILD=$(BUILD) tests/run-all $(UNIT_TESTS) $(GRADCHECKS) $(SYSTEM_TESTS)

golden: $(RESGEN)
	@for spec in tests/golden/*.yaml; do \
	  name=$$(basename $$spec .yaml); \
	  $(RESGEN) generate $$spec -o tests/golden/$$name || exit 1; \
	  echo "refreshed tests/golden/$$name/"; \
	done
