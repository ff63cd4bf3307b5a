/* A study's report from its runs' CSV logs (train --log): see report.h. */
#include "report.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "file_replace.h"
#include "net_api.h"
#include "printable.h"
#include "recipe.h"
#include "statistics.h"
#include "strbuf.h"
#include "texts.h"

/* Values against iterations, as a log's rows give them. */
struct series {
	int rows, capacity;
	long *iteration;
	double *value, *lr;
};

/* One run, as its log has it: the training loss of its rows and the test
 * error of its evaluations. */
struct run {
	bool present, finished, diverged; /* diverged: its loss or a parameter became non-finite */
	struct series train; /* value: train_loss */
	struct series test;  /* value: test_error, a fraction; the last is the final */
	double seconds;      /* compute time when the last row was written: its starts' time */
	double wall;         /* a cluster's run: its first start to its end, waits included; else 0 */
	/* from its output (VARIANT-seedS.log): what ran it, where, when */
	int threads, cores;
	char kernels[32], processor[128], version[64], started[32];
};

static void series_free(struct series *s)
{
	free(s->iteration);
	free(s->value);
	free(s->lr);
}

static int series_add(struct series *s, long iteration, double value, double lr)
{
	if (s->rows == s->capacity) {
		int capacity = s->capacity ? 2 * s->capacity : 64;
		long *at = realloc(s->iteration, (size_t)capacity * sizeof *at);
		if (at)
			s->iteration = at;
		double *values = realloc(s->value, (size_t)capacity * sizeof *values);
		if (values)
			s->value = values;
		double *lrs = realloc(s->lr, (size_t)capacity * sizeof *lrs);
		if (lrs)
			s->lr = lrs;
		if (!at || !values || !lrs)
			return -1;
		s->capacity = capacity;
	}
	s->iteration[s->rows] = iteration;
	s->value[s->rows] = value;
	s->lr[s->rows++] = lr;
	return 0;
}

/* The final test error, a fraction. */
static double final_error(const struct run *run) { return run->test.value[run->test.rows - 1]; }

static void run_free(struct run *run)
{
	series_free(&run->train);
	series_free(&run->test);
	memset(run, 0, sizeof *run);
}

/* The index of name among the header's comma-separated fields, or -1. */
static int column_of(const char *header, const char *name)
{
	int index = 0;
	size_t length = strlen(name);
	for (const char *at = header;; index++) {
		const char *end = at + strcspn(at, ",\r\n");
		if ((size_t)(end - at) == length && strncmp(at, name, length) == 0)
			return index;
		if (*end != ',')
			return -1;
		at = end + 1;
	}
}

/* Field index of a CSV line, as a number; NAN if absent or not a number. */
static double field(const char *line, int index)
{
	const char *at = line;
	for (int i = 0; i < index; i++) {
		at = strchr(at, ',');
		if (!at)
			return NAN;
		at++;
	}
	char *end;
	errno = 0;
	double value = strtod(at, &end);
	return end == at || errno == ERANGE || (*end != ',' && *end != '\n' && *end != '\r' && *end)
		       ? NAN
		       : value;
}

/* Whether field index of a CSV line is empty, as a training row's test
 * columns are. */
static bool field_empty(const char *line, int index)
{
	const char *at = line;
	for (int i = 0; at && i < index; i++)
		if ((at = strchr(at, ',')))
			at++;
	return at && (*at == ',' || *at == '\n' || *at == '\r' || *at == '\0');
}

enum { LOG_ROW_MAX = 1023 };

/* What a run's output says in its first lines: "data: ..., 2 threads, BLIS
 * zen3 kernels" and "machine: PROCESSOR, N cores online; resgen VERSION;
 * started DATE" (written since resgen recorded them). */
static void read_output(struct run *run, const char *path)
{
	char error[PATH_MAX + 128], line[LOG_ROW_MAX + 2];
	FILE *file = file_open_regular(path, NULL, error, sizeof error);
	for (int n = 0; file && n < 8 && fgets(line, sizeof line, file); n++) {
		const char *at;
		if (strncmp(line, "data: ", 6) == 0) {
			if ((at = strstr(line, " thread")))
				while (at > line && at[-1] >= '0' && at[-1] <= '9')
					at--;
			run->threads = at ? atoi(at) : 0;
			if ((at = strstr(line, "BLIS ")))
				sscanf(at, "BLIS %31s", run->kernels);
		} else if (strncmp(line, "machine: ", 9) == 0) {
			sscanf(line + 9, "%127[^,;\n]", run->processor);
			if ((at = strstr(line, " cores online")))
				while (at > line && at[-1] >= '0' && at[-1] <= '9')
					at--;
			run->cores = at ? atoi(at) : 0;
			if ((at = strstr(line, "; resgen ")))
				sscanf(at + 9, "%63[^;\n]", run->version);
			if ((at = strstr(line, "; started ")) && !run->started[0]) /* a resumed run's first start */
				sscanf(at + 10, "%31[^;\n]", run->started);
		}
	}
	if (file)
		fclose(file);
}

static int row_too_long(const char *path, int line_number, struct diag *d)
{
	return diag_at(d, path, line_number, 1, "a row longer than %d characters; a run's log holds short rows "
		       "of numbers (remove the run's files to run it again)", LOG_ROW_MAX);
}

/* A log's rows into the run's series. Since the log's columns each mean
 * one thing (val_loss marks them), a row's train_loss is the mean since
 * the row before on every row. In older logs, an evaluation row's was the
 * mean since the evaluation before: the same where the row before was an
 * evaluation (or there was none), and left out of the curve where
 * training rows came between. */
static int read_run(struct run *run, const char *path, struct diag *d)
{
	char error[PATH_MAX + 128], line[LOG_ROW_MAX + 2]; /* the row and its newline */
	FILE *file = file_open_regular(path, NULL, error, sizeof error);
	if (!file)
		return 0; /* not run yet */
	run->present = true;
	enum { ITERATION, LR, TRAIN_LOSS, TEST_ERROR, SECONDS, COLUMNS };
	static const char *const names[COLUMNS] = {"iteration", "lr", "train_loss", "test_error", "seconds"};
	int columns[COLUMNS], status = 0, line_number = 1;
	if (!fgets(line, sizeof line, file)) {
		fclose(file);
		return 0; /* created, nothing evaluated yet */
	}
	if (!strchr(line, '\n') && !feof(file))
		status = row_too_long(path, 1, d);
	for (int i = 0; status == 0 && i < COLUMNS; i++)
		if ((columns[i] = column_of(line, names[i])) < 0)
			status = diag_at(d, path, 1, 1, "this log has no '%s' column; it should be "
					 "written by a network's train --log", names[i]);
	bool one_meaning = column_of(line, "val_loss") >= 0, after_evaluation = true;
	while (status == 0 && fgets(line, sizeof line, file)) {
		line_number++;
		if (!strchr(line, '\n') && !feof(file)) {
			status = row_too_long(path, line_number, d);
			break;
		}
		if (line[0] == '\n')
			continue;
		double values[COLUMNS];
		for (int i = 0; i < COLUMNS; i++)
			values[i] = field(line, columns[i]);
		bool evaluated = !field_empty(line, columns[TEST_ERROR]);
		if (isnan(values[ITERATION]) || isnan(values[LR]) || isnan(values[TRAIN_LOSS]) ||
		    (evaluated && isnan(values[TEST_ERROR])) || isnan(values[SECONDS])) {
			/* A log cut mid-row is a run killed mid-write: its last line only. */
			if (!strchr(line, '\n'))
				break;
			status = diag_at(d, path, line_number, 1, "unreadable row; a run's log holds "
					 "numbers only (remove the run's files to run it again)");
			break;
		}
		long iteration = (long)values[ITERATION];
		bool since_row_before = one_meaning || !evaluated || after_evaluation;
		after_evaluation = evaluated;
		if ((since_row_before &&
		     series_add(&run->train, iteration, values[TRAIN_LOSS], values[LR]) != 0) ||
		    (evaluated && series_add(&run->test, iteration, values[TEST_ERROR], values[LR]) != 0)) {
			status = diag_file(d, path, "out of memory reading the log");
			break;
		}
		run->seconds = values[SECONDS];
	}
	fclose(file);
	return status;
}

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct summary {
	int count;             /* finished runs */
	double median, mean, std, minimum, maximum, seconds; /* errors in %; mean seconds */
};

/* A variant's final test errors, by seed, as counts of its test images
 * (the log's fraction times images, rounded) and in % of them:
 * finished[i] says whether seed i's run finished. The count of finished
 * runs. */
static int final_errors(const struct run *own, int seeds, long images, long *counts, double *errors,
			bool *finished)
{
	int n = 0;
	for (int i = 0; i < seeds; i++) {
		finished[i] = own[i].finished && own[i].test.rows > 0;
		counts[i] = finished[i] ? lround(final_error(&own[i]) * (double)images) : 0;
		errors[i] = finished[i] ? 100.0 * (double)counts[i] / (double)images : NAN;
		n += finished[i];
	}
	return n;
}

static int pack_finished(const double *errors, const bool *finished, int seeds, double *out)
{
	int n = 0;
	for (int i = 0; i < seeds; i++)
		if (finished[i])
			out[n++] = errors[i];
	return n;
}

static struct summary summarise(const struct run *runs, int count, long images)
{
	struct summary s = {0};
	double by_seed[STUDY_MAX_SEEDS], errors[STUDY_MAX_SEEDS];
	long counts[STUDY_MAX_SEEDS];
	bool finished[STUDY_MAX_SEEDS];
	final_errors(runs, count, images, counts, by_seed, finished);
	s.count = pack_finished(by_seed, finished, count, errors);
	for (int i = 0; i < count; i++)
		if (finished[i])
			s.seconds += runs[i].seconds;
	if (s.count == 0)
		return s;
	qsort(errors, (size_t)s.count, sizeof errors[0], compare_doubles);
	s.median = s.count % 2 ? errors[s.count / 2]
			       : (errors[s.count / 2 - 1] + errors[s.count / 2]) / 2;
	mean_and_std(errors, s.count, &s.mean, &s.std);
	s.minimum = errors[0];
	s.maximum = errors[s.count - 1];
	s.seconds /= s.count;
	return s;
}

static void format_minutes(char *out, size_t size, double seconds)
{
	if (seconds < 90)
		snprintf(out, size, "%.0f s", seconds);
	else if (seconds < 5400)
		snprintf(out, size, "%.1f min", seconds / 60);
	else
		snprintf(out, size, "%.1f h", seconds / 3600);
}

static const char *set_title(enum data_set set) { return data_sets[set].title; }

static void write_budget(struct strbuf *md, const struct study *study)
{
	const struct spec *spec = &study->variants[0].spec;
	char limits[96] = "";
	if (study->train_limit)
		snprintf(limits, sizeof limits, ", the first %ld training images", study->train_limit);
	if (study->test_limit)
		snprintf(limits + strlen(limits), sizeof limits - strlen(limits),
			 ", evaluated on the first %ld test images", study->test_limit);
	long images = study_train_images(study, 0);
	char epochs[64] = "epochs: as many as the folder's images make";
	if (images > 0)
		snprintf(epochs, sizeof epochs, "%.1f epochs of %ld images",
			 (double)spec->train.iterations * spec->train.batch / images, images);
	strbuf_printf(md, "Budget: %s%s; %ld iterations at batch %d (%s), evaluated every %ld; seeds",
		      set_title(spec->data.set), limits, spec->train.iterations, spec->train.batch, epochs,
		      spec->train.eval_every);
	for (int i = 0; i < study->seed_count; i++)
		strbuf_printf(md, "%s %ld", i ? "," : "", study->seeds[i]);
	strbuf_puts(md, ".");
	for (int v = 1; v < study->variant_count; v++) {
		const struct spec *other = &study->variants[v].spec;
		if (other->train.iterations != spec->train.iterations ||
		    other->train.batch != spec->train.batch || other->data.set != spec->data.set) {
			strbuf_puts(md, " Variants differ in their budget: see each one's spec in "
				    "specs/ of this folder.");
			break;
		}
	}
	strbuf_puts(md, "\n\n");
}

static void write_network(struct strbuf *md, const struct spec *spec)
{
	strbuf_printf(md, "%s %s, depth %d, %s shortcut", spec_unit_name(spec->net.unit),
		      spec_ordering_name(spec->net.ordering), spec->net.depth,
		      spec_shortcut_name(spec->net.shortcut));
	if (spec->net.shortcut == SHORTCUT_SCALING)
		strbuf_printf(md, " %g/%g", spec->net.scale_shortcut, spec->net.scale_branch);
	else if (spec->net.shortcut == SHORTCUT_EXCLUSIVE_GATING ||
		 spec->net.shortcut == SHORTCUT_SHORTCUT_GATING)
		strbuf_printf(md, " (b_g %g)", spec->net.gate_bias);
	else if (spec->net.shortcut == SHORTCUT_DROPOUT)
		strbuf_printf(md, " (%g)", spec->net.dropout_rate);
}

/* The keys of variant v's recipe that differ from the first variant's, as
 * --set takes them ("lr.schedule=cosine"), into out; "" where none does. */
static void recipe_difference(const struct study *study, int v, char *out, size_t size)
{
	struct net_defaults base, own;
	spec_recipe(&study->variants[0].spec, &base);
	spec_recipe(&study->variants[v].spec, &own);
	recipe_set_text(out, size, &own, recipe_differing(&own, &base), true);
}

/* Whether any variant's recipe differs from the first's: the variants'
 * table then has a column that says how. */
static bool recipes_differ(const struct study *study)
{
	char text[512];
	for (int v = 1; v < study->variant_count; v++) {
		recipe_difference(study, v, text, sizeof text);
		if (text[0])
			return true;
	}
	return false;
}

/* plot/train-VARIANT.dat and plot/test-VARIANT.dat: a series of each seed's
 * run, iteration by iteration, as the mean over the seeds with a row there
 * and their range (minimum, maximum); with the learning rate (every
 * seed's: the schedule is the recipe's). scale: 100 for errors in
 * percent. */
static void write_curve(struct strbuf *out, const struct run *runs, int count, bool train, const char *what,
			double scale)
{
	int next[STUDY_MAX_SEEDS] = {0};
	strbuf_printf(out, "# iteration lr %s_mean minimum maximum runs\n", what);
	for (;;) {
		long iteration = LONG_MAX;
		for (int i = 0; i < count; i++) {
			const struct series *s = train ? &runs[i].train : &runs[i].test;
			if (next[i] < s->rows && s->iteration[next[i]] < iteration)
				iteration = s->iteration[next[i]];
		}
		if (iteration == LONG_MAX)
			break;
		double sum = 0, least = INFINITY, most = -INFINITY, lr = 0;
		int n = 0;
		for (int i = 0; i < count; i++) {
			const struct series *s = train ? &runs[i].train : &runs[i].test;
			if (next[i] >= s->rows || s->iteration[next[i]] != iteration)
				continue;
			double v = scale * s->value[next[i]];
			lr = s->lr[next[i]++];
			sum += v;
			least = fmin(least, v);
			most = fmax(most, v);
			n++;
		}
		strbuf_printf(out, "%ld %.6g %.6g %.6g %.6g %d\n", iteration, lr, sum / n, least, most, n);
	}
}

static void write_test(struct strbuf *md, const struct comparison *c)
{
	if (c->no_spread)
		strbuf_puts(md, " no spread |");
	else if (!c->valid)
		strbuf_puts(md, " - |");
	else
		strbuf_printf(md, " t = %.2f, df %.1f, p = %.3g |", c->t, c->df, c->p);
}

/* Whether some variant names 'against': then only those are compared. */
static bool pairs_variants(const struct study *study)
{
	for (int v = 0; v < study->variant_count; v++)
		if (study->variants[v].against >= 0)
			return true;
	return false;
}

/* The variant v is compared with: the one it names ('against'), else the
 * study's first; -1 where it is compared with none (the first, or, in a
 * study whose variants name theirs, one that names none). */
static int baseline_of(const struct study *study, int v)
{
	if (pairs_variants(study) || v == 0)
		return study->variants[v].against;
	return 0;
}

/* Each variant against its baseline (baseline_of): the difference of the
 * means, its 95% interval and both tests, Welch's and (where seeds pair
 * the runs) the paired one; the reading takes the paired test where it can
 * be made, as a seed gives every variant the same initial weights and data
 * order, else Welch's, and holds the family's error to 5% with Holm's
 * correction for the number of comparisons. */
static void write_comparisons(struct strbuf *md, const struct study *study, const struct run *runs)
{
	int count = study->variant_count, seeds = study->seed_count;
	if (count < 2)
		return;
	struct tested {
		struct comparison welch, paired, *read; /* read: the test the reading takes */
		int n, nb;
	} *tested = calloc((size_t)count, sizeof *tested);
	double p[STUDY_MAX_VARIANTS], adjusted[STUDY_MAX_VARIANTS];
	int tests = 0;
	if (!tested)
		return;
	for (int v = 1; v < count; v++) {
		int b = baseline_of(study, v);
		if (b < 0)
			continue;
		double base[STUDY_MAX_SEEDS], base_packed[STUDY_MAX_SEEDS];
		long base_counts[STUDY_MAX_SEEDS], images = study_test_images(study, b);
		bool base_finished[STUDY_MAX_SEEDS];
		final_errors(&runs[b * seeds], seeds, images, base_counts, base, base_finished);
		int nb = tested[v].nb = pack_finished(base, base_finished, seeds, base_packed);
		double errors[STUDY_MAX_SEEDS], packed[STUDY_MAX_SEEDS];
		long counts[STUDY_MAX_SEEDS], pa[STUDY_MAX_SEEDS], pb[STUDY_MAX_SEEDS];
		bool finished[STUDY_MAX_SEEDS];
		final_errors(&runs[v * seeds], seeds, study_test_images(study, v), counts, errors, finished);
		int pairs = 0;
		tested[v].n = pack_finished(errors, finished, seeds, packed);
		for (int i = 0; i < seeds; i++)
			if (finished[i] && base_finished[i]) {
				pa[pairs] = counts[i];
				pb[pairs++] = base_counts[i];
			}
		if (tested[v].n == 0 || nb == 0)
			continue;
		tested[v].welch = welch(packed, tested[v].n, base_packed, nb);
		/* pairs are of one test set only: counts of other sets do not pair */
		if (study_test_images(study, v) == images)
			tested[v].paired = paired(pa, pb, pairs, images);
		/* a paired difference that is the same on every seed admits no test,
		 * and Welch's, which ignores the pairing, would say less than it */
		tested[v].read = tested[v].paired.valid ? &tested[v].paired
				 : tested[v].paired.no_spread ? NULL
				 : tested[v].welch.valid    ? &tested[v].welch
							    : NULL;
		if (tested[v].read)
			p[tests++] = tested[v].read->p;
	}
	holm(p, tests, adjusted);
	bool paired = pairs_variants(study);
	if (paired)
		strbuf_puts(md, "Each variant that names another (`against`) against that one");
	else
		strbuf_printf(md, "Against the baseline, the study's first variant `%s`", study->variants[0].name);
	strbuf_puts(md, ": the difference of the mean final "
		      "test errors (points of %; negative is lower error) with its 95% interval, Welch's t test "
		      "(unequal variances, two-sided) and the paired t test over the seeds both ran. The reading "
		      "takes the paired test where two seeds or more pair the runs, since a seed fixes the initial "
		      "weights' draw and the data order for every variant alike (the difference and interval are "
		      "then the paired ones), else Welch's; ");
	if (tests > 1)
		strbuf_printf(md, "and, as %d comparisons are made, it holds their chance of any false \"lower\" or "
			      "\"higher\" to 5%% with Holm's correction (the adjusted p). ", tests);
	else
		strbuf_printf(md, "%s comparison is made, so Holm's correction leaves its p as it is. ",
			      tests == 1 ? "one" : "no");
	strbuf_puts(md, "A difference whose adjusted p is 0.05 or more is within the noise of these seeds.\n\n");
	strbuf_puts(md, paired ? "| variant | against | difference | 95% interval | Welch's t | paired t | reading: test, adjusted p |\n"
					     "|---|---|---|---|---|---|---|\n"
					   : "| variant | difference | 95% interval | Welch's t | paired t | reading: test, adjusted p |\n"
					     "|---|---|---|---|---|---|\n");
	for (int v = 1, k = 0; v < count; v++) {
		int b = baseline_of(study, v);
		if (b < 0)
			continue;
		const char *name = study->variants[v].name;
		const struct tested *t = &tested[v];
		int nb = t->nb;
		strbuf_printf(md, "| %s", name);
		if (paired) /* the column a study without 'against' never had */
			strbuf_printf(md, " | %s", study->variants[b].name);
		if (t->n == 0 || nb == 0) {
			strbuf_puts(md, " | - | - | - | - | no finished runs to compare |\n");
			continue;
		}
		const struct comparison *shown = t->read		   ? t->read
						 : t->paired.no_spread ? &t->paired
								       : &t->welch;
		strbuf_printf(md, " | %+.2f |", shown->difference);
		if (shown->valid)
			strbuf_printf(md, " %+.2f to %+.2f |", shown->low, shown->high);
		else
			strbuf_puts(md, " - |");
		write_test(md, &t->welch);
		write_test(md, &t->paired);
		if (!t->read && t->paired.no_spread) {
			strbuf_printf(md, " cannot tell: every seed differs by the same %+.2f points, and no test "
				      "can be made without some spread |\n", t->paired.difference);
			continue;
		}
		if (!t->read) {
			strbuf_printf(md, " cannot tell: a test needs two finished seeds of each, with some spread |\n");
			continue;
		}
		double q = adjusted[k++];
		const char *test = t->read == &t->paired ? "paired" : "Welch";
		if (q < 0.05)
			strbuf_printf(md, " %s by %.2f points (%s, p = %.3g) |\n",
				      shown->difference < 0 ? "lower error" : "higher error", fabs(shown->difference),
				      test, q);
		else
			strbuf_printf(md, " within the noise of %d and %d seeds (%s, p = %.3g) |\n", t->n, nb, test, q);
	}
	strbuf_puts(md, "\n");
	free(tested);
}

/* A run's compute time (wall false), or its wall time from its first
 * start to its end (0 where the run did not record them). */
static double run_time(const struct run *run, bool wall)
{
	return wall ? run->wall : run->seconds;
}

static double run_time_max(const struct run *runs, int total, bool wall)
{
	double most = 0;
	for (int i = 0; i < total; i++)
		if (runs[i].finished && run_time(&runs[i], wall) > most)
			most = run_time(&runs[i], wall);
	return most;
}

/* An ISO time as tools/slurm-task and tools/run-study write it
 * (2026-11-29T11:28:50Z), in seconds since 1970; 0 if it is not one. */
static double iso_seconds(const char *text)
{
	struct tm tm = {0};
	const char *end = strptime(text, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return end && (*end == '\0' || *end == ' ' || *end == '\n') ? (double)timegm(&tm) : 0;
}

/* The first word of a file's first line, read from a regular file. */
static void first_word(const char *path, char *out, size_t size)
{
	char error[PATH_MAX + 128], line[128];
	out[0] = '\0';
	FILE *file = file_open_regular(path, NULL, error, sizeof error);
	if (file && fgets(line, sizeof line, file))
		snprintf(out, size, "%.*s", (int)strcspn(line, " \n"), line);
	if (file)
		fclose(file);
}

/* A cluster's run: from its first start (RUN.starts, written by
 * tools/slurm-task) to its end (RUN.ended, by tools/run-study). */
static double read_wall_time(const char *run_path)
{
	char path[PATH_MAX + 16], start[64], end[64];
	snprintf(path, sizeof path, "%s.starts", run_path);
	first_word(path, start, sizeof start);
	snprintf(path, sizeof path, "%s.ended", run_path);
	first_word(path, end, sizeof end);
	double from = iso_seconds(start), to = iso_seconds(end);
	return from > 0 && to >= from ? to - from : 0;
}

/* Each run's time in a table of variants by seeds, in one unit; the
 * widest ratio of one variant's times, and that variant, in *widest and
 * *widest_variant (-1: none above 1), where they are given. */
static void write_run_times(struct strbuf *md, const struct study *study, const struct run *runs, bool wall,
			    const char *what, double *widest, int *widest_variant)
{
	int count = study->variant_count, seeds = study->seed_count;
	double most = run_time_max(runs, count * seeds, wall);
	double unit = most >= 5400 ? 3600 : most >= 90 ? 60 : 1;
	strbuf_printf(md, "- %s (%s):\n\n| variant |", what, unit == 3600 ? "h" : unit == 60 ? "min" : "s");
	for (int i = 0; i < seeds; i++)
		strbuf_printf(md, " seed %ld |", study->seeds[i]);
	strbuf_puts(md, "\n|---|");
	for (int i = 0; i < seeds; i++)
		strbuf_puts(md, "---|");
	strbuf_puts(md, "\n");
	double widest_ratio = 1;
	int widest_at = -1;
	for (int v = 0; v < count; v++) {
		double least = 0, longest = 0;
		strbuf_printf(md, "| %s |", study->variants[v].name);
		for (int i = 0; i < seeds; i++) {
			const struct run *r = &runs[v * seeds + i];
			double t = run_time(r, wall);
			if (r->finished && (t > 0 || !wall))
				strbuf_printf(md, " %.1f |", t / unit);
			else
				strbuf_puts(md, " - |");
			if (r->finished && t > 0) {
				least = least == 0 || t < least ? t : least;
				longest = t > longest ? t : longest;
			}
		}
		strbuf_puts(md, "\n");
		if (least > 0 && longest / least > widest_ratio) {
			widest_ratio = longest / least;
			widest_at = v;
		}
	}
	strbuf_puts(md, "\n");
	if (widest)
		*widest = widest_ratio;
	if (widest_variant)
		*widest_variant = widest_at;
}

/* How the report was made and on what: the command, resgen's version (of
 * the report, and of the runs as their output says), the machine, the
 * date, and each run's time in one unit; and a note where the runs of one
 * variant, which do the same work, took unequal times: a busy machine. */
/* The make command that runs the study (target "study") or another target
 * of it, with the variables it was given. */
static void study_command(const struct study *study, const char *results, const char *target, char *out,
			  size_t size)
{
	char expected[PATH_MAX], results_default[PATH_MAX];
	snprintf(expected, sizeof expected, "specs/studies/%s.yaml", study->name);
	snprintf(results_default, sizeof results_default, "results/%s", study->name);
	if (strcmp(study->path, expected) == 0)
		snprintf(out, size, "make %s S=%s", target, study->name);
	else
		snprintf(out, size, "make %s STUDY=%s", target, study->path);
	if (strcmp(results, results_default) != 0)
		snprintf(out + strlen(out), size - strlen(out), " RESULTS=%s", results);
}

/* Who wrote the report, as the tools say (RESGEN_REPORT_WRITER: `make
 * study ...`, `make study-report ...`, or Slurm's report job N of `make
 * study-submit ...`), printable; else the command resgen study report
 * was run for, make study's. */
static void report_writer(const struct study *study, const char *results, char *out, size_t size)
{
	const char *told = getenv("RESGEN_REPORT_WRITER");
	if (told && told[0]) {
		printable_text(out, size, told);
		return;
	}
	char command[PATH_MAX * 2 + 64];
	study_command(study, results, "study", command, sizeof command);
	snprintf(out, size, "`%s`", command);
}

static void write_provenance(struct strbuf *md, const struct study *study, const char *results,
			     const struct run *runs)
{
	int count = study->variant_count, seeds = study->seed_count, total = count * seeds;
	char command[PATH_MAX * 2 + 64], writer[PATH_MAX * 3], jobs[PATH_MAX];
	/* a study submitted to Slurm has its arrays' ids in slurm/jobs */
	snprintf(jobs, sizeof jobs, "%s/slurm/jobs", results);
	bool cluster = access(jobs, F_OK) == 0;
	study_command(study, results, cluster ? "study-submit" : "study", command, sizeof command);
	report_writer(study, results, writer, sizeof writer);
	time_t now = time(NULL);
	char date[32];
	strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
	/* make study passes its version (git describe); resgen itself is not
	 * rebuilt at every commit, so it does not know one */
	const char *version = getenv("RESGEN_VERSION") && getenv("RESGEN_VERSION")[0] ? getenv("RESGEN_VERSION")
										       : "unknown";
	strbuf_printf(md, "## How it was made\n\n- Command: `%s` (it %s; rerun it to reproduce or extend the "
		      "study).\n- This report: written by %s, resgen %s%s, %s.\n",
		      command,
		      cluster ? "sends what is unfinished to Slurm, whose report job writes this report when "
				"the runs have ended"
			      : "resumes what is unfinished, then writes this report",
		      writer, version, strstr(version, "-dirty") ? " (its tree was modified)" : "", date);
	/* what the runs' output recorded: the same for all, or "varied" */
	const char *what[4] = {"resgen", "processor", "BLIS kernels", "started"};
	for (int k = 0; k < 4; k++) {
		const char *seen = NULL, *last = NULL;
		bool varied = false, missing = false;
		for (int i = 0; i < total; i++) {
			if (!runs[i].present)
				continue;
			const char *value = k == 0 ? runs[i].version : k == 1 ? runs[i].processor
								: k == 2 ? runs[i].kernels : runs[i].started;
			if (!value[0]) {
				missing = true;
				continue;
			}
			if (seen && strcmp(seen, value) != 0 && k != 3)
				varied = true;
			if (k == 3) { /* the earliest and the latest start, as the dates sort */
				seen = !seen || strcmp(value, seen) < 0 ? value : seen;
				last = !last || strcmp(value, last) > 0 ? value : last;
				continue;
			}
			seen = seen ? seen : value;
			last = value;
		}
		if (k == 0)
			strbuf_puts(md, "- The runs: ");
		if (!seen)
			strbuf_printf(md, "%s not recorded%s", what[k], k == 3 ? "" : ", ");
		else if (k == 3)
			strbuf_printf(md, "started %s%s%s", seen, last != seen && strcmp(last, seen) ? " to " : "",
				      last != seen && strcmp(last, seen) ? last : "");
		else
			strbuf_printf(md, "%s %s%s%s, ", what[k], seen, varied ? " (and others: see the logs)" : "",
				      missing ? " (some logs do not say)" : "");
	}
	int threads = 0, cores = 0;
	for (int i = 0; i < total; i++) {
		threads = threads ? threads : runs[i].threads;
		cores = cores ? cores : runs[i].cores;
	}
	if (cores)
		strbuf_printf(md, "; %d cores", cores);
	if (threads)
		strbuf_printf(md, "; %d thread%s a run", threads, threads == 1 ? "" : "s");
	strbuf_puts(md, " (from each run's output, `VARIANT-seedS.log`; runs made before resgen wrote its "
		    "version, the processor and the date there do not say them).\n");
	double widest;
	int widest_variant;
	write_run_times(md, study, runs, false,
			"Each run's compute time, the time of its starts to its last logged row (its log's "
			"`seconds`: a cluster's waits between requeues are not in it)",
			&widest, &widest_variant);
	/* (waits in the queue make wall times unequal: no note is drawn from them) */
	if (run_time_max(runs, total, true) > 0)
		write_run_times(md, study, runs, true,
				"Each run's wall time, from its first start to its end (`VARIANT-seedS.starts` and "
				"`.ended`): a cluster's run, its waits in Slurm's queue between requeues included",
				NULL, NULL);
	if (widest > 1.25)
		strbuf_printf(md, "Note: the runs of one variant do the same work, yet `%s`'s took up to %.1f times "
			      "as long as each other: the machine was busy during part of the study. The times "
			      "per run, and the estimate made from them, are only as good as the machine was "
			      "quiet; the errors do not depend on it.\n\n",
			      study->variants[widest_variant].name, widest);
}

int study_report(const struct study *study, const char *results, struct diag *d)
{
	int count = study->variant_count, seeds = study->seed_count, status = 0;
	struct run *runs = calloc((size_t)count * (size_t)seeds, sizeof *runs);
	/* report.md, plot/errors.dat, then a training and a test curve per variant */
	int files = 2 + 2 * count;
	struct strbuf *texts = calloc((size_t)files, sizeof *texts);
	char **names = calloc((size_t)files, sizeof *names);
	if (!runs || !texts || !names) {
		free(runs);
		free(texts);
		free(names);
		return diag_file(d, results, "out of memory writing the report");
	}
	int finished = 0, diverged = 0, present = 0;
	for (int v = 0; v < count && status == 0; v++)
		for (int s = 0; s < seeds && status == 0; s++) {
			char path[PATH_MAX];
			struct run *run = &runs[v * seeds + s];
			snprintf(path, sizeof path, "%s/%s-seed%ld.csv", results, study->variants[v].name,
				 study->seeds[s]);
			status = read_run(run, path, d);
			snprintf(path, sizeof path, "%s/%s-seed%ld.log", results, study->variants[v].name,
				 study->seeds[s]);
			read_output(run, path);
			snprintf(path, sizeof path, "%s/%s-seed%ld", results, study->variants[v].name,
				 study->seeds[s]);
			run->wall = read_wall_time(path);
			snprintf(path, sizeof path, "%s/%s-seed%ld.done", results, study->variants[v].name,
				 study->seeds[s]);
			run->finished = run->present && access(path, F_OK) == 0;
			snprintf(path, sizeof path, "%s/%s-seed%ld.diverged", results,
				 study->variants[v].name, study->seeds[s]);
			run->diverged = !run->finished && access(path, F_OK) == 0;
			finished += run->finished;
			diverged += run->diverged;
			present += run->present;
		}
	struct strbuf *md = &texts[0], *errors = &texts[1];
	const char *title = study->title[0] ? study->title : study->name;
	char writer[PATH_MAX * 3];
	report_writer(study, results, writer, sizeof writer);
	strbuf_printf(md, "# %s\n\nThe study `%s` (%s), written by %s: %d variants x %d "
		      "seeds, %d of %d runs finished",
		      title, study->name, study->path, writer, count, seeds, finished, count * seeds);
	if (diverged > 0)
		strbuf_printf(md, ", %d diverged", diverged);
	if (present > finished + diverged)
		strbuf_printf(md, ", %d under way or stopped", present - finished - diverged);
	strbuf_puts(md, ".\n\n");
	write_budget(md, study);
	strbuf_puts(md, "Final test error (%) over the finished seeds (a diverged run, its loss or "
		    "a parameter non-finite, is listed but not counted); the paper's figure is for the "
		    "row of its table the variant comes from (CIFAR-10, its depth and budget), "
		    "beside which only the order of the variants compares.\n\n"
		    "| variant | network | ");
	bool recipe_column = recipes_differ(study);
	if (recipe_column)
		strbuf_puts(md, "recipe, where it differs from the first variant's | ");
	strbuf_printf(md, "median | mean +- std | 95%% interval of the mean | seeds | paper | compute time per run |\n"
		      "|---|---|---|---|---|---|---|---|%s\n",
		      recipe_column ? "---|" : "");
	strbuf_puts(errors, "# index variant median minimum maximum then each finished seed's "
		    "error (%)\n");
	for (int v = 0; v < count; v++) {
		const struct study_variant *variant = &study->variants[v];
		const struct run *own = &runs[v * seeds];
		struct summary s = summarise(own, seeds, study_test_images(study, v));
		char time_text[32];
		format_minutes(time_text, sizeof time_text, s.seconds);
		strbuf_printf(md, "| %s | ", variant->name);
		write_network(md, &variant->spec);
		if (recipe_column) {
			char difference[512];
			recipe_difference(study, v, difference, sizeof difference);
			strbuf_printf(md, " | %s", difference[0] ? difference : v == 0 ? "the first" : "the same");
		}
		double finals[STUDY_MAX_SEEDS], packed[STUDY_MAX_SEEDS];
		long counts[STUDY_MAX_SEEDS];
		bool done[STUDY_MAX_SEEDS];
		final_errors(own, seeds, study_test_images(study, v), counts, finals, done);
		struct comparison interval = mean_interval(packed, pack_finished(finals, done, seeds, packed));
		if (s.count == 0)
			strbuf_puts(md, " | - | - | - | ");
		else if (s.count == 1)
			strbuf_printf(md, " | %.2f | %.2f | - | ", s.median, s.mean);
		else if (!interval.valid)
			strbuf_printf(md, " | %.2f | %.2f +- %.2f | - | ", s.median, s.mean, s.std);
		else
			strbuf_printf(md, " | %.2f | %.2f +- %.2f | %.2f to %.2f | ", s.median, s.mean, s.std,
				      interval.low, interval.high);
		for (int i = 0, shown = 0; i < seeds; i++)
			if (own[i].finished && own[i].test.rows > 0)
				strbuf_printf(md, "%s%.2f", shown++ ? ", " : "", 100 * final_error(&own[i]));
			else if (own[i].diverged)
				strbuf_printf(md, "%sdiverged", shown++ ? ", " : "");
		strbuf_printf(md, " | %s | %s |\n", variant->paper[0] ? variant->paper : "-",
			      s.count ? time_text : "-");
		if (s.count > 0) {
			strbuf_printf(errors, "%d %s %.6g %.6g %.6g", v, variant->name, s.median,
				      s.minimum, s.maximum);
			for (int i = 0; i < seeds; i++)
				if (own[i].finished && own[i].test.rows > 0)
					strbuf_printf(errors, " %.6g", 100 * final_error(&own[i]));
			strbuf_puts(errors, "\n");
		}
		write_curve(&texts[2 + 2 * v], own, seeds, true, "train_loss", 1);
		write_curve(&texts[3 + 2 * v], own, seeds, false, "test_error_percent", 100);
	}
	strbuf_puts(md, "\nThe interval is Student's t over the seeds: with 2 or 3 seeds it is wide, and two "
		    "variants whose intervals overlap may still differ; the table below tests each difference.\n\n");
	write_comparisons(md, study, runs);
	strbuf_puts(md, "Training loss (each logged row's mean over the iterations since the row before) and test "
		    "error (each evaluation) against iterations, as the paper's Figs. 1 and 6: the mean over "
		    "the seeds, their range shaded, and the learning rate below (`plot/` holds the "
		    "numbers):\n\n![curves](curves.png)\n\n"
		    "Final test error per variant, each seed a point, the median a bar:\n\n"
		    "![errors](errors.png)\n\n"
		    "The gradient's flow through the units, log10 ||dL/dx_l|| / ||dL/dx_L|| against "
		    "the unit l, at initialisation and after training (the first seed's run; "
		    "`gradflow/` holds the numbers):\n\n![gradient flow](gradflow.png)\n\n"
		    "Each run's log is `VARIANT-seedS.csv` (`make plot LOG=...` draws one), its "
		    "output `VARIANT-seedS.log`, its spec `specs/VARIANT.yaml`.\n\n");
	write_provenance(md, study, results, runs);
	names[0] = "report.md";
	names[1] = "plot/errors.dat";
	for (int i = 2; i < files && status == 0; i++) {
		char name[SPEC_NAME_MAX + 32];
		snprintf(name, sizeof name, "plot/%s-%s.dat", i % 2 ? "test" : "train", study->variants[(i - 2) / 2].name);
		if (!(names[i] = strdup(name)))
			status = diag_file(d, results, "out of memory writing the report");
	}
	if (status == 0) {
		char plot_dir[PATH_MAX];
		snprintf(plot_dir, sizeof plot_dir, "%s/plot", results);
		status = make_dirs(plot_dir, d);
	}
	if (status == 0)
		status = write_texts(results, (const char *const *)names, texts, files, false, d);
	for (int i = 0; i < count * seeds; i++)
		run_free(&runs[i]);
	for (int i = 0; i < files; i++) {
		strbuf_free(&texts[i]);
		if (i >= 2)
			free(names[i]);
	}
	free(runs);
	free(texts);
	free(names);
	return status;
}
