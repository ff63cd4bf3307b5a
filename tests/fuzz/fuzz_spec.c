/* libFuzzer harness: any bytes through the spec loader, then, for a spec
 * that passes, the graph and the plan (stages 1 to 3 of the generator).
 * Built with AddressSanitizer and UBSan by `make fuzz`; a crash, a leak or
 * undefined behaviour stops the run with the input that caused it. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "graph.h"
#include "plan.h"
#include "spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spec spec;
	struct diag d = {{0}};
	if (spec_parse(&spec, "fuzz.yaml", (const char *)data, size, &d) != 0)
		return 0;
	struct diag warnings[1 + SPEC_MAX_LR_STEPS];
	int warning_count = spec_warnings(&spec, warnings, (int)(sizeof warnings / sizeof warnings[0]));
	for (int i = 0; i < warning_count; i++)
		if (strncmp(warnings[i].text, "fuzz.yaml:", 10) != 0)
			__builtin_trap(); /* every warning is located */
	struct graph graph;
	if (graph_build(&graph, &spec, &d) != 0)
		return 0;
	struct plan plan;
	if (plan_build(&plan, &graph, &d) == 0) {
		/* Every stored activation and gradient lies inside the arena;
		 * -1 marks a tensor a fused step computes inside, or no
		 * gradient. */
		for (int t = 0; t < graph.tensor_count; t++) {
			long size = graph_tensor_size(&graph, t);
			long at[2] = {plan.activation_offset[t], plan.gradient_offset[t]};
			for (int i = 0; i < 2; i++)
				if (at[i] < -1 || (at[i] >= 0 && at[i] + size > plan.arena_per_image))
					__builtin_trap();
		}
		(void)plan_memory(&plan, spec.train.batch, 2, 4);
		plan_free(&plan);
	}
	graph_free(&graph);
	return 0;
}
