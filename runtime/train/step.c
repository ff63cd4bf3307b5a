/* step and init: a training step dumped for comparing builds, and the
 * seeded initial weights exported. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "run_agreement.h"
#include "net_api.h"
#include "printable.h"
#include "ranks.h"
#include "recipe.h"
#include "session.h"
#include "state.h"
#include "tensor_file.h"
#include "train.h"

/* Dump of the first step on the first batch, for comparing builds, and of
 * the first batch evaluated with the weights after the last step. Across
 * ranks, each runs its part of the batch, and rank 0 dumps the whole
 * batch's first loss and the weights after the last step: what a reference
 * computing BN over each part (or over the whole batch, with bn_sync) can
 * check. */
int step_run(const struct run_options *o)
{
	struct session s;
	int opened = session_open(&s, o), status = ranks_agree_status(opened);
	if (status == 0 && (status = agree_on_settings(&s, o)) == 0)
		status = agree_on_start(&s, 0);
	if (status != 0) {
		if (opened == 0) /* another rank's failure, or a disagreement */
			session_free(&s);
		return status;
	}
	const struct net_defaults *r = &o->recipe;
	int n = s.batch;
	bool alone = s.ranks == 1;
	long *indices = malloc((size_t)n * sizeof *indices);
	int *labels = malloc((size_t)n * sizeof *labels);
	struct tensor_file dump = {0};
	int failed = ranks_max(!indices || !labels);
	for (int i = 0; !failed && i < n; i++)
		indices[i] = (long)s.rank * n + i;
	for (int step = 0; !failed && step < o->steps; step++) {
		data_fill_batch(&s.train, indices, n, s.mean, s.std, NULL, 0, state_input(&s.state, n),
				labels);
		if (step == 0 && alone)
			failed |= tensor_file_add(&dump, "input", state_input(&s.state, n),
						  (long)n * net_info.channels * net_info.height *
							  net_info.width);
		s.state.labels = labels;
		s.state.step = step;
		s.state.input_gradient = step == 0 && alone; /* dumped below */
		state_zero_grads(&s.state);
		if (step > 0 || !alone) {
			net_forward(&s.state, n);
			backward_summing_gradients(&s);
		} else {
			/* Group by group, to dump each group's output and the
			 * gradient of its input while they are in the arena. */
			char name[300];
			for (int g = 0; g < net_info.group_count; g++) {
				const struct net_group *group = &net_info.groups[g];
				group->forward(&s.state, n);
				snprintf(name, sizeof name, "act/%s", group->name);
				failed |= tensor_file_add(&dump, name,
							  s.state.arena + (size_t)n * group->output_offset,
							  (long)n * group->output_size);
			}
			for (int g = net_info.group_count - 1; g >= 0; g--) {
				const struct net_group *group = &net_info.groups[g];
				group->backward(&s.state, n);
				snprintf(name, sizeof name, "grad_in/%s", group->name);
				failed |= tensor_file_add(
					&dump, name, s.state.arena + (size_t)n * group->input_gradient_offset,
					(long)n * group->input_size);
			}
			double label_values[4096];
			for (int i = 0; i < n; i++)
				label_values[i] = labels[i];
			failed |= tensor_file_add_double(&dump, "labels", label_values, n);
		}
		if (step == 0) {
			double loss = s.state.loss * n; /* the whole batch's: the ranks' sums added */
			ranks_add(&loss, 1);
			loss /= o->batch;
			failed |= tensor_file_add_double(&dump, "loss", alone ? &s.state.loss : &loss, 1);
		}
		if (step == 0 && alone) {
			failed |= tensor_file_add(&dump, "logits", state_logits(&s.state, n),
						  (long)n * net_info.classes);
			failed |= tensor_file_add(&dump, "input_gradient", state_input_gradient(&s.state, n),
						  (long)n * net_info.channels * net_info.height *
							  net_info.width);
			for (int i = 0; i < net_info.param_tensor_count; i++) {
				const struct net_param *p = &net_info.params[i];
				char name[300];
				snprintf(name, sizeof name, "grad/%s", p->name);
				if (p->trained)
					failed |= tensor_file_add(&dump, name, s.state.grads + p->offset,
								  p->count);
			}
		}
		double lr = recipe_rate(r, step, o->iterations);
		if (ranks_max(!isfinite(s.state.loss))) {
			if (s.rank == 0)
				error_line("%s: the loss became non-finite at step %d (lr %g); training diverged, try a "
					   "smaller learning rate; no dump written\n",
					   net_info.name, step + 1, lr);
			status = 3;
			break;
		}
		net_sgd(&s.state, (real)lr, (real)r->momentum, (real)r->weight_decay);
		average_running_statistics(&s);
		const struct net_param *broken = state_non_finite_param(&s.state);
		if (ranks_max(broken != NULL)) {
			if (s.rank == 0)
				error_line("%s: %s %s became non-finite at step %d (lr %g); training diverged, try a "
					   "smaller learning rate; no dump written\n",
					   net_info.name, !broken ? "a parameter" : broken->trained ? "parameter" : "running statistic",
					   broken ? broken->name : "on another rank", step + 1, lr);
			status = 3;
			break;
		}
		failed = ranks_max(failed);
	}
	if (status != 0)
		failed = 0; /* diverged: nothing is written */
	else if (!failed && alone) {
		/* The first batch again, in evaluation (BN by its running
		 * statistics, dropout scaling): the path test errors come from. */
		data_fill_batch(&s.train, indices, n, s.mean, s.std, NULL, 0, state_input(&s.state, n), labels);
		s.state.labels = labels;
		s.state.training = 0;
		net_forward(&s.state, n);
		s.state.training = 1;
		failed |= tensor_file_add_double(&dump, "eval/loss", &s.state.loss, 1);
		failed |= tensor_file_add(&dump, "eval/logits", state_logits(&s.state, n), (long)n * net_info.classes);
	}
	for (int i = 0; status == 0 && !failed && i < net_info.param_tensor_count; i++) {
		const struct net_param *p = &net_info.params[i];
		char name[300];
		snprintf(name, sizeof name, "after/%s", p->name);
		failed |= tensor_file_add(&dump, name,
					  (p->trained ? s.state.params : s.state.buffers) + p->offset,
					  p->count);
	}
	char message[512];
	struct weights_meta meta = session_meta(&s);
	if (failed) {
		error_line("%s: out of memory\n", net_info.name);
		status = 1;
	} else if (status == 0 && s.rank == 0 &&
		   (tensor_file_save(&dump, o->dump_path, message, sizeof message) != 0 ||
		    (o->save_weights && state_save_weights(&s.state, &meta, o->save_weights, message, sizeof message) != 0))) {
		error_line("%s: %s\n", net_info.name, message);
		status = 1;
	}
	tensor_file_free(&dump);
	free(indices);
	free(labels);
	session_free(&s);
	return ranks_agree_status(status);
}

int init_run(const struct run_options *o)
{
	struct net_state state;
	char message[512];
	if (state_create(&state, 1, 1, message, sizeof message) != 0) {
		error_line("%s: %s\n", net_info.name, message);
		return 1;
	}
	state_init(&state, (uint64_t)o->seed);
	int status = 0;
	if (state_save_weights(&state, NULL, o->save_weights, message, sizeof message) != 0) {
		error_line("%s: %s\n", net_info.name, message);
		status = 1;
	}
	state_free(&state);
	return status;
}
