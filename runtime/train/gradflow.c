/* Gradient flow, measured on a session (session.h): see gradflow.h. */
#include "gradflow.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "printable.h"

/* Gradient flow, the argument of the paper's sections 2 and 3 made
 * measurable: for each unit l, on a fixed batch (the first training images,
 * not augmented) in training mode, ||x_l|| (the unit's input), ||x_{l+1} -
 * x_l|| (what the unit adds: ||F(x_l)|| when its shortcut and its
 * after-addition are identities, as in full pre-activation; empty where the
 * shape changes), ||dL/dx_l||, and that over ||dL/dx_L||, x_L the last
 * unit's output. Norms over the whole batch. BN's running statistics are
 * put back afterwards, so measuring changes nothing in the run. */
static double norm_of(const real *values, const real *minus, long count)
{
	double sum = 0;
	for (long i = 0; i < count; i++) {
		double v = (double)values[i] - (minus ? (double)minus[i] : 0);
		sum += v * v;
	}
	return sqrt(sum);
}

static int gradflow_measure(struct session *s, int n, long iteration, FILE *csv)
{
	int groups = net_info.group_count;
	long largest = 0;
	for (int g = 0; g < groups; g++)
		if (net_info.groups[g].output_size > largest)
			largest = net_info.groups[g].output_size;
	real *previous = malloc((size_t)n * (size_t)largest * sizeof *previous);
	real *buffers = malloc((size_t)(net_info.buffer_count ? net_info.buffer_count : 1) * sizeof *buffers);
	double *norms = calloc((size_t)groups * 3, sizeof *norms); /* input, change, gradient */
	long *indices = malloc((size_t)n * sizeof *indices);
	int *labels = malloc((size_t)n * sizeof *labels);
	int status = 0;
	if (!previous || !buffers || !norms || !indices || !labels) {
		status = -1;
		goto done;
	}
	memcpy(buffers, s->state.buffers, (size_t)net_info.buffer_count * sizeof *buffers);
	for (int i = 0; i < n; i++)
		indices[i] = i;
	data_fill_batch(&s->train, indices, n, s->mean, s->std, NULL, 0, state_input(&s->state, n), labels);
	s->state.labels = labels;
	s->state.step = iteration;
	s->state.input_gradient = 1; /* every group's input gradient, the first's too */
	state_zero_grads(&s->state);
	for (int g = 0; g < groups; g++) {
		const struct net_group *group = &net_info.groups[g];
		group->forward(&s->state, n);
		const real *out = s->state.arena + (size_t)n * group->output_offset;
		if (g > 0) {
			norms[3 * g] = norm_of(previous, NULL, (long)n * group->input_size);
			norms[3 * g + 1] = group->output_size == group->input_size
						   ? norm_of(out, previous, (long)n * group->output_size)
						   : NAN;
		}
		memcpy(previous, out, (size_t)n * (size_t)group->output_size * sizeof *previous);
	}
	for (int g = groups - 1; g >= 0; g--) {
		const struct net_group *group = &net_info.groups[g];
		group->backward(&s->state, n);
		norms[3 * g + 2] = norm_of(s->state.arena + (size_t)n * group->input_gradient_offset, NULL,
					   (long)n * group->input_size);
	}
	memcpy(s->state.buffers, buffers, (size_t)net_info.buffer_count * sizeof *buffers);
	s->state.input_gradient = 0;
	state_zero_grads(&s->state);
	double last = norms[3 * (groups - 1) + 2];
	for (int g = 1; g < groups - 1; g++) {
		fprintf(csv, "%ld,%d,%s,%.9g,", iteration, g, net_info.groups[g].name, norms[3 * g]);
		if (isnan(norms[3 * g + 1]))
			fprintf(csv, ",");
		else
			fprintf(csv, "%.9g,", norms[3 * g + 1]);
		fprintf(csv, "%.9g,%.9g\n", norms[3 * g + 2], norms[3 * g + 2] / last);
	}
done:
	free(previous);
	free(buffers);
	free(norms);
	free(indices);
	free(labels);
	return status;
}

/* One measurement into the CSV, its writing checked. */
int gradflow_record(struct session *s, const struct run_options *o, long iteration, FILE *csv)
{
	if (gradflow_measure(s, o->batch, iteration, csv) != 0) {
		error_line("%s: out of memory\n", net_info.name);
		return 1;
	}
	return log_check(csv, o->gradflow_path);
}
