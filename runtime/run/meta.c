/* What weights files and checkpoints say of the network's input beside
 * its weights: meta.h. */
#include "meta.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "net_api.h"
#include "printable.h"
#include "tensor_file.h"

int weights_meta_add(struct tensor_file *f, const struct weights_meta *meta)
{
	/* the names, one a line, a byte a value (as tensor files hold numbers) */
	char name[DATA_NAME_MAX];
	long length = 0;
	for (int i = 0; i < net_info.classes; i++)
		length += (long)strlen(data_class_name(meta->data, i, name, sizeof name)) + 1;
	double *names = malloc((size_t)length * sizeof *names);
	length = 0;
	for (int i = 0; names && i < net_info.classes; i++) {
		data_class_name(meta->data, i, name, sizeof name);
		for (const char *c = name; *c; c++)
			names[length++] = (unsigned char)*c;
		names[length++] = '\n';
	}
	char set[64];
	double set_name[64];
	int set_length = snprintf(set, sizeof set, "%s", data_sets[meta->data->set].name);
	for (int i = 0; i < set_length && i < 63; i++)
		set_name[i] = (unsigned char)set[i];
	int failed = !names || tensor_file_add_double(f, "meta/input_mean", meta->mean, net_info.channels) ||
		     tensor_file_add_double(f, "meta/input_std", meta->std, net_info.channels) ||
		     tensor_file_add_double(f, "meta/input_images", &(double){(double)meta->images}, 1) ||
		     tensor_file_add_double(f, "meta/data_set", set_name, set_length < 63 ? set_length : 63) ||
		     tensor_file_add_double(f, "meta/class_names", names, length);
	free(names);
	return failed ? -1 : 0;
}

/* Whether the values of a meta/ tensor of text (a byte a value) are
 * printable ASCII. */
static bool printable_bytes(const struct tensor_file_entry *e)
{
	for (long i = 0; i < e->count; i++) {
		double v = e->values[i];
		if (!(v == floor(v) && v >= 0x20 && v < 0x7f))
			return false;
	}
	return true;
}

/* How many names meta/class_names holds: lines of 1 to DATA_NAME_MAX - 1
 * bytes of printable UTF-8 (printable.h), each ended by a newline; -1
 * where it holds anything else. */
static long class_names_count(const struct tensor_file_entry *e)
{
	char line[DATA_NAME_MAX], shown[DATA_NAME_MAX];
	long lines = 0, length = 0;
	for (long i = 0; i < e->count; i++) {
		double v = e->values[i];
		if (!(v == floor(v) && v >= 0 && v <= 255) || length >= DATA_NAME_MAX - 1)
			return -1;
		if (v != '\n') {
			line[length++] = (char)(unsigned char)v;
			continue;
		}
		line[length] = '\0';
		printable_text(shown, sizeof shown, line);
		if (length == 0 || strcmp(shown, line) != 0)
			return -1;
		lines++;
		length = 0;
	}
	return length == 0 ? lines : -1;
}

static bool class_names_fit(const struct tensor_file_entry *e) { return class_names_count(e) == net_info.classes; }

/* What is wrong with the meta/ tensors of f (weights_meta, above), in
 * one line in error: -1; 1 when they hold the normalisation, 0 when they
 * hold none. Every value is one that a run could have stored: the channel
 * statistics of pixels in 0..1 units (a mean from 0 to 1, a standard
 * deviation above 0 and at most 0.5, or 1 for images of one value), a
 * whole number of images, a data set's name and a name a class. */
int weights_meta_check(const struct tensor_file *f, const char *path, char *error, size_t size)
{
	const struct tensor_file_entry *m = tensor_file_find(f, "meta/input_mean"),
				       *d = tensor_file_find(f, "meta/input_std"),
				       *n = tensor_file_find(f, "meta/input_images"),
				       *set = tensor_file_find(f, "meta/data_set"),
				       *names = tensor_file_find(f, "meta/class_names");
	if (!m && !d && !n)
		return 0;
	const char *forged = "; were these weights edited or damaged?";
	if (!m || !d || !n) {
		snprintf(error, size, "%s: meta/%s is missing beside the rest of the input's normalisation; a weights "
			 "file holds all of meta/input_mean, input_std and input_images or none%s",
			 path, !m ? "input_mean" : !d ? "input_std" : "input_images", forged);
		return -1;
	}
	for (const struct tensor_file_entry *e = m; e; e = e == m ? d : NULL)
		if (e->count != net_info.channels) {
			snprintf(error, size, "%s: %s has %ld values, but %s takes %d channel%s%s", path, e->name,
				 e->count, net_info.name, net_info.channels, net_info.channels == 1 ? "" : "s", forged);
			return -1;
		}
	for (int c = 0; c < net_info.channels; c++) {
		double mean = m->values[c], std = d->values[c];
		if (!(mean >= 0 && mean <= 1)) {
			snprintf(error, size, "%s: meta/input_mean value %d is %g; a mean of pixels in 0..1 units is "
				 "from 0 to 1%s", path, c, mean, forged);
			return -1;
		}
		if (!((std > 0 && std <= 0.5) || std == 1)) {
			snprintf(error, size, "%s: meta/input_std value %d is %g; a standard deviation of pixels in 0..1 "
				 "units is above 0 and at most 0.5 (1 for images of one value)%s", path, c, std, forged);
			return -1;
		}
	}
	double count = n->count == 1 ? n->values[0] : 0;
	if (!(count >= 1 && count <= 1e9 && count == floor(count))) {
		snprintf(error, size, "%s: meta/input_images is not a whole number of training images from 1 to "
			 "1000000000%s", path, forged);
		return -1;
	}
	if (set && (set->count < 1 || set->count > 63 || !printable_bytes(set))) {
		snprintf(error, size, "%s: meta/data_set is not a data set's name (1 to 63 printable characters)%s",
			 path, forged);
		return -1;
	}
	if (names && !class_names_fit(names)) {
		snprintf(error, size, "%s: meta/class_names holds %s, but %s has %d classes, a name each of 1 to "
			 "%d bytes of printable UTF-8%s", path, class_names_count(names) >= 0 ? "another number of names"
			 : "unprintable or overlong names", net_info.name, net_info.classes, DATA_NAME_MAX - 1, forged);
		return -1;
	}
	return 1;
}

/* Why a weights file's value cannot be loaded, or NULL: it must be a finite
 * number that stays finite in this build's real. */
const char *stored_value_unloadable(double value)
{
	if (isnan(value))
		return "is NaN";
	if (!isfinite(value))
		return "is infinite";
	/* Compared, not converted: converting a double beyond float's range
	 * to float is undefined behaviour. */
	if (fabs(value) > (sizeof(real) == sizeof(float) ? FLT_MAX : DBL_MAX))
		return "is too large for " REAL_NAME;
	return NULL;
}
