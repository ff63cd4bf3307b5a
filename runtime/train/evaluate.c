/* Evaluation: train's as it goes, and the evaluate command, which measures
 * saved weights on a split: top-1 and top-5 error, loss, each class's
 * error and the confusion matrix. */
#include "evaluate.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_replace.h"
#include "gemm.h"
#include "image_folder.h"
#include "net_api.h"
#include "printable.h"
#include "ranks.h"
#include "state.h"
#include "train.h"

int predicted_class(const real *logits)
{
	int best = 0;
	for (int j = 1; j < net_info.classes; j++)
		if (logits[j] > logits[best])
			best = j;
	return best;
}

/* How many other classes score at least as high as the label: a tie
 * counts against it, and so does a NaN on either side, so a constant
 * classifier is never in its own top 5. */
static int classes_above(const real *logits, int label)
{
	int above = 0;
	for (int j = 0; j < net_info.classes; j++)
		above += j != label && !(logits[j] < logits[label]);
	return above;
}

/* A field of CSV: quoted where it holds a comma, a quote, a line's end or
 * an outer space (a quote inside doubled), and, where it starts as a
 * spreadsheet's formula would (=, +, -, @, a tab or a carriage return),
 * quoted with a ' before it, so that a spreadsheet shows it as text. */
static void write_csv_field(FILE *out, const char *text)
{
	size_t length = strlen(text);
	bool formula = length > 0 && strchr("=+-@\t\r", text[0]);
	bool quoted = formula || strpbrk(text, ",\"\r\n") || (length > 0 && (text[0] == ' ' || text[length - 1] == ' '));
	fputs(quoted ? "\"" : "", out);
	fputs(formula ? "'" : "", out);
	for (const char *c = text; *c; c++) {
		if (*c == '"')
			fputc('"', out);
		fputc(*c, out);
	}
	fputs(quoted ? "\"" : "", out);
}

/* One image's row of the predictions: the image (a folder's file, its
 * path under the data folder; a set in memory's, its index in the split),
 * label, prediction, then each class's probability (the softmax of the
 * logits, in double), 17 digits: enough to give back each double. */
static void write_prediction(FILE *out, const struct dataset *split, long index, int label, int predicted,
			     const real *logits)
{
	double top = logits[predicted], sum = 0;
	for (int j = 0; j < net_info.classes; j++)
		sum += exp((double)logits[j] - top);
	char image[DATA_NAME_MAX];
	write_csv_field(out, data_file_name(split, index, image, sizeof image));
	fprintf(out, ",%d,%d", label, predicted);
	for (int j = 0; j < net_info.classes; j++)
		fprintf(out, ",%.17g", exp((double)logits[j] - top) / sum);
	fputc('\n', out);
}

void evaluate_split(struct session *s, const struct dataset *split, struct evaluation *e)
{
	int batch = s->batch, classes = net_info.classes;
	long *indices = malloc((size_t)batch * sizeof *indices);
	int *labels = malloc((size_t)batch * sizeof *labels);
	double loss_sum = 0;
	long errors = 0, top5 = 0;
	long first = split->count * s->rank / s->ranks, end = split->count * (s->rank + 1) / s->ranks;
	s->state.training = 0;
	for (long start = first; indices && labels && start < end; start += batch) {
		int n = (int)(end - start < batch ? end - start : batch);
		for (int i = 0; i < n; i++)
			indices[i] = start + i;
		data_fill_batch(split, indices, n, s->mean, s->std, NULL, 0, state_input(&s->state, n), labels);
		s->state.labels = labels;
		net_forward(&s->state, n);
		loss_sum += s->state.loss * n;
		const real *logits = state_logits(&s->state, n);
		for (int i = 0; i < n; i++) {
			const real *z = logits + (size_t)i * classes;
			int predicted = predicted_class(z);
			errors += predicted != labels[i];
			top5 += classes_above(z, labels[i]) >= 5;
			if (e->confusion)
				e->confusion[(size_t)labels[i] * classes + predicted]++;
			if (e->predictions)
				write_prediction(e->predictions, split, start + i, labels[i], predicted, z);
		}
	}
	s->state.training = 1;
	double sums[3] = {loss_sum, (double)errors, (double)top5};
	ranks_add(sums, 3);
	e->images += split->count;
	e->loss_sum += sums[0];
	e->errors += (long)sums[1];
	e->top5_errors += (long)sums[2];
	free(indices);
	free(labels);
}

/* The confusion matrix as CSV: a header of the predicted classes, then a
 * row for each true class, headed by it; classes by their names in data. */
static int write_confusion(const char *path, const long *confusion, const struct dataset *data)
{
	int classes = net_info.classes;
	char name[DATA_NAME_MAX];
	struct file_replace r;
	char error[PATH_MAX + 256];
	if (file_replace_begin(&r, path, error, sizeof error) != 0) {
		error_line("%s: %s\n", net_info.name, error);
		return 1;
	}
	fprintf(r.file, "true\\predicted");
	for (int j = 0; j < classes; j++) {
		fputc(',', r.file);
		write_csv_field(r.file, data_class_name(data, j, name, sizeof name));
	}
	fprintf(r.file, "\n");
	for (int i = 0; i < classes; i++) {
		write_csv_field(r.file, data_class_name(data, i, name, sizeof name));
		for (int j = 0; j < classes; j++)
			fprintf(r.file, ",%ld", confusion[(size_t)i * classes + j]);
		fprintf(r.file, "\n");
	}
	if (file_replace_commit(&r, error, sizeof error) != 0) {
		error_line("%s: %s\n", net_info.name, error);
		return 1;
	}
	return 0;
}

/* The predictions' header: the image, then a probability column a class,
 * named by the class (p0, p1... where the set names none). */
static void write_predictions_header(FILE *out, const struct dataset *data, int classes)
{
	fprintf(out, "image,label,predicted");
	for (int j = 0; j < classes; j++) {
		char name[DATA_NAME_MAX], number[16];
		data_class_name(data, j, name, sizeof name);
		snprintf(number, sizeof number, "%d", j);
		fputc(',', out);
		if (strcmp(name, number) == 0)
			fprintf(out, "p%d", j);
		else
			write_csv_field(out, name);
	}
	fputc('\n', out);
}

int evaluate_run(const struct run_options *options)
{
	/* the normalisation the weights keep, read once: it spares the session
	 * computing one (a folder's own statistics are a pass over its
	 * images); a file that cannot be read is the session's to refuse, and
	 * forged meta/ tensors are refused below, once the session opened */
	struct run_options with = *options;
	const struct run_options *o = &with;
	double kept_mean[16], kept_std[16];
	long kept_images = 0;
	char meta_error[PATH_MAX + 512];
	int stored = state_load_normalisation(options->load_weights, kept_mean, kept_std, &kept_images, meta_error,
					      sizeof meta_error);
	with.normalisation_stored = stored > 0;
	struct session s;
	int status = session_open(&s, o);
	if (status != 0)
		return status;
	int classes = net_info.classes;
	bool train_split = o->split && strcmp(o->split, "train") == 0,
	     validation_split = o->split && strcmp(o->split, "validation") == 0;
	const struct dataset *split = train_split ? &s.train : validation_split ? &s.validation : &s.test;
	struct evaluation e = {.confusion = calloc((size_t)classes * classes, sizeof(long))};
	if (!e.confusion) {
		error_line("%s: out of memory\n", net_info.name);
		session_free(&s);
		return 1;
	}
	char weights[4 * PATH_MAX], normalised[160];
	printable_text(weights, sizeof weights, o->load_weights);
	long images = stored > 0 ? kept_images : s.train.count;
	if (stored > 0) {
		memcpy(s.mean, kept_mean, (size_t)net_info.channels * sizeof *s.mean);
		memcpy(s.std, kept_std, (size_t)net_info.channels * sizeof *s.std);
	}
	if (stored < 0) {
		error_line("%s: %s\n", net_info.name, meta_error);
		free(e.confusion);
		session_free(&s);
		return 2;
	}
	if (stored && o->train_limit && !train_split && !validation_split) {
		error_line("%s: --train-limit: %s keeps the normalisation it was trained with (%ld training images), "
			   "so the limit would change nothing on the test split; leave it out\n",
			   net_info.name, weights, images);
		free(e.confusion);
		session_free(&s);
		return 2;
	}
	/* a folder's runs, and torchvision's imported weights, store ImageNet's
	 * fixed mean and deviation, not statistics of their images */
	bool imagenet = stored && memcmp(s.mean, image_folder_mean, sizeof image_folder_mean) == 0 &&
			memcmp(s.std, image_folder_std, sizeof image_folder_std) == 0;
	bool given = stored && data_set_is_folder(s.train.set) && net_info.defaults.normalise == NORMALISE_GIVEN &&
		     memcmp(s.mean, net_info.defaults.normalise_mean, sizeof net_info.defaults.normalise_mean) == 0 &&
		     memcmp(s.std, net_info.defaults.normalise_std, sizeof net_info.defaults.normalise_std) == 0;
	if (imagenet)
		snprintf(normalised, sizeof normalised,
			 "inputs normalised by ImageNet's channel mean and deviation (torchvision's), as stored with the "
			 "weights");
	else if (given)
		snprintf(normalised, sizeof normalised,
			 "inputs normalised by the spec's channel mean and deviation (data.normalise), as stored with "
			 "the weights");
	else
		snprintf(normalised, sizeof normalised, "inputs normalised by the %ld training images' channel statistics, %s",
			 images, stored ? "as stored with the weights" : "computed now (the weights store none)");
	const struct dataset *data = &s.train; /* whose classes every split shares */
	printf("%s: %s, %ld parameters, %s\n", net_info.name, net_info.summary, net_info.param_count,
	       net_info.dtype);
	printf("evaluate: %s on the %s split of %s, %ld images; %s; batch %d, %d thread%s, BLIS %s kernels\n",
	       weights, train_split ? "training" : validation_split ? "validation (the last training images held out)" : "test",
	       o->synthetic ? "synthetic data" : data_sets[data->set].name, split->count,
	       normalised, o->batch, s.threads, s.threads == 1 ? "" : "s", gemm_kernels());
	fflush(stdout);
	struct file_replace predictions;
	char error[PATH_MAX + 256];
	if (o->predictions_path) {
		if (file_replace_begin(&predictions, o->predictions_path, error, sizeof error) != 0) {
			error_line("%s: %s\n", net_info.name, error);
			free(e.confusion);
			session_free(&s);
			return 1;
		}
		e.predictions = predictions.file;
		write_predictions_header(e.predictions, data, classes);
	}
	evaluate_split(&s, split, &e);
	double n = (double)e.images;
	if (!isfinite(e.loss_sum)) {
		error_line("%s: the loss on these weights is %g: the network's outputs are not finite numbers, so "
			   "no error can be measured; were these weights from a run that diverged?\n",
			   net_info.name, e.loss_sum / n);
		if (o->predictions_path)
			file_replace_abort(&predictions);
		free(e.confusion);
		session_free(&s);
		return 3;
	}
	if (o->predictions_path) {
		if (file_replace_commit(&predictions, error, sizeof error) != 0) {
			error_line("%s: %s\n", net_info.name, error);
			status = 1;
		} else {
			char shown[4 * PATH_MAX];
			printable_text(shown, sizeof shown, o->predictions_path);
			printf("wrote the predictions (a row for each image, in the split's order: %s, label, predicted "
			       "class and each class's probability, the softmax of the logits) to %s\n",
			       data_set_is_folder(data->set) ? "its file under the data folder" : "its index in the split",
			       shown);
		}
	}
	printf("error %.2f%% (%ld of %ld)", 100.0 * (double)e.errors / n, e.errors, e.images);
	if (classes > 5)
		printf(", top-5 error %.2f%% (%ld)", 100.0 * (double)e.top5_errors / n, e.top5_errors);
	printf(", loss %.10g\n", e.loss_sum / n);
	printf("class              images   error  most often taken for\n");
	for (int i = 0; i < classes; i++) {
		const long *row = e.confusion + (size_t)i * classes;
		long images = 0, worst = -1;
		for (int j = 0; j < classes; j++) {
			images += row[j];
			if (j != i && row[j] > 0 && (worst < 0 || row[j] > row[worst]))
				worst = j;
		}
		char name[DATA_NAME_MAX];
		data_class_name(data, i, name, sizeof name);
		int characters = 0; /* of UTF-8: the bytes that start one */
		for (const char *c = name; *c; c++)
			characters += ((unsigned char)*c & 0xc0) != 0x80;
		printf("%s%*s %8ld %6.2f%%", name, characters < 16 ? 16 - characters : 0, "", images,
		       images ? 100.0 * (double)(images - row[i]) / (double)images : 0.0);
		if (worst >= 0)
			printf("  %s (%ld image%s)", data_class_name(data, (int)worst, name, sizeof name), row[worst],
			       row[worst] == 1 ? "" : "s");
		printf("\n");
	}
	if (status == 0 && o->confusion_path && (status = write_confusion(o->confusion_path, e.confusion, data)) == 0) {
		char shown[4 * PATH_MAX];
		printable_text(shown, sizeof shown, o->confusion_path);
		printf("wrote the confusion matrix (a row for each true class, a column for each predicted) to %s\n",
		       shown);
	}
	free(e.confusion);
	session_free(&s);
	return fflush(stdout) == 0 ? status : 1;
}
