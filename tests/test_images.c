/* Folders of images as data (runtime/data/image_folder.h): the crops and
 * scales the augmentation draws, evaluation's crops against torchvision's
 * (tests/images/check_crops.py), files that cannot be decoded, and a run
 * on a generated folder that trains, evaluates and resumes bitwise. The
 * folder is ImageFolder's layout of JPEGs of many sizes, colour, grey and
 * CMYK, and a PNG named .JPEG (tests/images/make_folder.py). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <omp.h>

#include "command.h"
#include "data.h"
#include "image_folder.h"
#include "tensor_file.h"

static char photos[400];

static int setup(void **unused)
{
	(void)unused;
	if (command_setup("images") != 0)
		return -1;
	snprintf(photos, sizeof photos, "%s/photos", scratch);
	char command[1024];
	snprintf(command, sizeof command,
		 "/usr/bin/python3 tests/images/make_folder.py %s --classes 6 --train 10 --val 4 --bad", photos);
	return system(command);
}

/* The paper's scale augmentation: the shorter side drawn from [256, 480]
 * (for a 224 crop; scaled with it), the longer in proportion, a crop x
 * crop square inside, both sides drawn across their range; evaluation's
 * 256 and center; torchvision's RandomResizedCrop with aspect: a part of
 * 8% to 100% of the area, of ratio 3/4 to 4/3, inside the image. Each
 * draw follows its key alone. */
static void test_folder_draws_the_papers_crops(void **unused)
{
	(void)unused;
	int sizes[][2] = {{500, 375}, {375, 500}, {64, 400}, {1000, 1000}, {224, 300}};
	for (int crop = 64; crop <= 224; crop += 160) {
		int low = (int)lround(256.0 * crop / 224), high = (int)lround(480.0 * crop / 224);
		struct folder_augment scale = {low, high, false, true}, aspect = {low, high, true, true};
		int lowest = 1 << 30, highest = 0, flips = 0;
		for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
			int w = sizes[s][0], h = sizes[s][1];
			for (uint64_t key = 1; key <= 400; key++) {
				struct folder_crop c, again;
				image_folder_draw(w, h, crop, &scale, key, &c);
				image_folder_draw(w, h, crop, &scale, key, &again);
				assert_memory_equal(&c, &again, sizeof c);
				int shorter = w < h ? c.resized_width : c.resized_height;
				int longer = w < h ? c.resized_height : c.resized_width;
				assert_true(shorter >= low && shorter <= high);
				assert_int_equal(longer, (int)((long)shorter * (w < h ? h : w) / (w < h ? w : h)));
				assert_true(c.x >= 0 && c.y >= 0 && c.x + crop <= c.resized_width && c.y + crop <= c.resized_height);
				lowest = shorter < lowest ? shorter : lowest;
				highest = shorter > highest ? shorter : highest;
				flips += c.flip;

				image_folder_draw(w, h, crop, &aspect, key, &c);
				assert_true(c.x >= 0 && c.y >= 0 && c.x + c.width <= w && c.y + c.height <= h);
				double area = (double)c.width * c.height / ((double)w * h), ratio = (double)c.width / c.height;
				bool drawn = area >= 0.079 && area <= 1.0 && ratio >= 0.74 && ratio <= 1.36;
				bool center = c.x == (w - c.width) / 2 && c.y == (h - c.height) / 2; /* the fallback */
				assert_true(drawn || center);
			}
			struct folder_crop e;
			image_folder_draw(w, h, crop, NULL, 0, &e);
			assert_int_equal(w < h ? e.resized_width : e.resized_height, low);
			assert_true(abs(2 * e.x - (e.resized_width - crop)) <= 1 && abs(2 * e.y - (e.resized_height - crop)) <= 1);
			assert_false(e.flip);
		}
		assert_true(lowest <= low + 2 && highest >= high - 2); /* the whole range is drawn */
		assert_true(flips > 800 && flips < 1200);              /* half of 2000 */
	}
}

/* Evaluation's crop of every image (colour, grey, CMYK, a PNG named
 * .JPEG) equals torchvision's Resize + CenterCrop of it, pixel for pixel. */
static void test_folder_crops_equal_torchvisions(void **unused)
{
	(void)unused;
	char command[1024], out[4096], err[4096];
	snprintf(command, sizeof command, "/usr/bin/python3 tests/images/check_crops.py %s %s/tests/bin/photos-f64",
		 photos, build);
	int status = run(command, out, sizeof out, err, sizeof err);
	if (status != 0)
		print_error("%s%s", out, err);
	assert_int_equal(status, 0);
	expect_in(out, "crops of 60 images at 64x64 against torchvision's Resize + CenterCrop: largest difference 0 "
		       "grey levels");
}

/* A file that cannot be decoded stops the run before training, with one
 * line naming it; --skip-bad-images leaves it out and says so. */
static void test_folder_refuses_files_it_cannot_decode(void **unused)
{
	(void)unused;
	char command[4096], message[2048], out[8192], err[4096];
	const char *cases[][2] = {
		{"truncated.JPEG", "a JPEG whose data ends before its image does: truncated"},
		{"text.JPEG", "neither a JPEG nor a PNG (it starts with bytes 6e 6f)"},
		/* issue 84, item 4: found when the folder opens, as Pillow
		 * refuses it, not fed as a blank image at every step */
		{"bad-scan.JPEG", "a JPEG that cannot be decoded (Invalid component ID 119 in SOS)"},
		/* item 7: Pillow clips it, so no crop would be torchvision's */
		{"grey16.png", "a 16-bit greyscale PNG, which torchvision's loader (Pillow) clips to white where this "
			       "reader would scale it (convert it to 8 bits)"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		snprintf(command, sizeof command, "cp %s/bad/%s %s/train/n00000003/", photos, cases[i][0], photos);
		assert_int_equal(system(command), 0);
		snprintf(command, sizeof command, "%s/tests/bin/photos-f32 train --data %s --iterations 2", build, photos);
		snprintf(message, sizeof message,
			 "photos: %s/train/n00000003/%s: %s; it cannot be decoded (remove or replace it, or pass "
			 "--skip-bad-images to leave it out)\n",
			 photos, cases[i][0], cases[i][1]);
		expect_failure(command, 2, message);
		snprintf(command, sizeof command, "%s/tests/bin/photos-f32 train --data %s --iterations 2 --skip-bad-images",
			 build, photos);
		assert_int_equal(run(command, out, sizeof out, err, sizeof err), 0);
		snprintf(message, sizeof message,
			 "data: left out 1 file that cannot be decoded (--skip-bad-images), the first "
			 "%s/train/n00000003/%s\n",
			 photos, cases[i][0]);
		expect_in(out, message);
		expect_in(out, "data: folder, 60 training and 24 test images of 3x64x64");
		snprintf(command, sizeof command, "rm %s/train/n00000003/%s", photos, cases[i][0]);
		assert_int_equal(system(command), 0);
	}
	/* the network's classes against the folder's */
	snprintf(command, sizeof command, "mkdir %s/train/n00000099 && %s/tests/bin/photos-f32 train --data %s", photos,
		 build, photos);
	snprintf(message, sizeof message,
		 "photos: %s/train: 7 class folders, but this network has 6 classes; give the spec's data.classes the "
		 "folder's count\n",
		 photos);
	expect_failure(command, 2, message);
	snprintf(command, sizeof command, "rmdir %s/train/n00000099", photos);
	assert_int_equal(system(command), 0);
}

/* Issue 84, items 4, 5 and 7: images Pillow decodes that are unusual, a
 * JPEG with junk bytes before its end (libjpeg warns, and the decoder
 * stopped there, feeding a blank image), images 3 pixels thin and a
 * 16-bit colour PNG, are cropped as torchvision crops them, pixel for
 * pixel. */
static void test_folder_decodes_what_pillow_decodes(void **unused)
{
	(void)unused;
	char command[2048], out[4096], err[4096];
	snprintf(command, sizeof command,
		 "/usr/bin/python3 tests/images/make_folder.py %1$s/odd --classes 6 --train 1 --val 1 --odd && "
		 "/usr/bin/python3 tests/images/check_crops.py %1$s/odd %2$s/tests/bin/photos-f64",
		 scratch, build);
	int status = run(command, out, sizeof out, err, sizeof err);
	if (status != 0)
		print_error("%s%s", out, err);
	assert_int_equal(status, 0);
	expect_in(out, "crops of 10 images at 64x64 against torchvision's Resize + CenterCrop: largest difference 0 "
		       "grey levels");
}

/* Item 5: a 1 x 32768 JPEG of 100 KB was resized whole to the drawn
 * shorter side before cropping (256 x 8.4 million pixels in evaluation, up
 * to 480 x 15.7 million in training at crop 224). Its crops now take the
 * crop's memory: they are made within 256 MiB of address space. */
static void test_a_thin_image_takes_the_crops_memory(void **unused)
{
	(void)unused;
#ifdef __SANITIZE_ADDRESS__
	skip(); /* AddressSanitizer's shadow memory takes terabytes of address space */
#endif
	char path[600];
	snprintf(path, sizeof path, "%s/odd/thin.JPEG", scratch);
	FILE *file = fopen(path, "rb");
	assert_non_null(file);
	static unsigned char data[1 << 20];
	long bytes = (long)fread(data, 1, sizeof data, file);
	fclose(file);
	assert_true(bytes > 1000);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct rlimit limit = {256L << 20, 256L << 20};
		setrlimit(RLIMIT_AS, &limit);
		static real out[3 * 224 * 224];
		struct folder_augment scale = {256, 480, false, true};
		char reason[256];
		double mean[3] = {0.5, 0.5, 0.5}, std[3] = {0.25, 0.25, 0.25};
		int failed = image_bytes_fill(data, bytes, 224, NULL, 0, mean, std, out, reason, sizeof reason) != 0;
		for (uint64_t key = 1; key <= 4 && !failed; key++)
			failed = image_bytes_fill(data, bytes, 224, &scale, key, mean, std, out, reason, sizeof reason) != 0;
		if (failed)
			fprintf(stderr, "the thin image's crop failed: %s\n", reason);
		_exit(failed);
	}
	int status = 0;
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Item 6: a resumed run noticed no image replaced by another of the same
 * size (the fingerprint covered names and sizes); it covers the bytes. */
static void test_resume_notices_an_image_replaced_by_one_of_its_size(void **unused)
{
	(void)unused;
	char command[8192], checkpoint[400], out[16384], err[4096], image[600];
	snprintf(checkpoint, sizeof checkpoint, "%s/replaced.checkpoint", scratch);
	snprintf(command, sizeof command,
		 "cp -r %1$s %2$s/replaced && %3$s/tests/bin/photos-f32 train --data %2$s/replaced --iterations 4 "
		 "--checkpoint-every 2 --checkpoint %4$s > /dev/null",
		 photos, scratch, build, checkpoint);
	assert_int_equal(system(command), 0);
	/* a black JPEG padded to the size of the first training image */
	snprintf(image, sizeof image, "%s/replaced/train/n00000000/train_0_0.JPEG", scratch);
	snprintf(command, sizeof command,
		 "size=$(stat -c %%s %1$s) && /usr/bin/python3 -c \"import sys; from PIL import Image; "
		 "Image.new('RGB', (80, 80)).save(sys.argv[1], 'JPEG')\" %1$s.new && "
		 "head -c $((size - $(stat -c %%s %1$s.new))) /dev/zero >> %1$s.new && mv %1$s.new %1$s && "
		 "test $(stat -c %%s %1$s) = $size",
		 image);
	assert_int_equal(system(command), 0);
	snprintf(command, sizeof command, "%s/tests/bin/photos-f32 train --data %s/replaced --resume %s --iterations 6",
		 build, scratch, checkpoint);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 2);
	expect_in(err, "other data");
	assert_null(strstr(out, "resumed from"));
}

/* Each image's augmentation is a function of (seed, iteration, image):
 * filled alone, in another place of the batch, by another number of
 * threads (a folder's images are decoded in parallel), it has the same
 * bits; so a rank, which fills its part of the batch alone, gives every
 * image the draws of the single-process run. Another iteration or seed
 * draws otherwise. The same interface names each image (data_file_name). */
static void expect_keyed(const struct dataset *d, const struct augment *augment)
{
	enum { N = 6 };
	const long indices[N] = {5, 17, 2, 41, 33, 8};
	double mean[3] = {0.5, 0.4, 0.3}, std[3] = {0.25, 0.2, 0.3};
	size_t image = (size_t)d->channels * d->height * d->width;
	real *batch = malloc(N * image * sizeof *batch), *alone = malloc(image * sizeof *alone);
	assert_non_null(batch);
	assert_non_null(alone);
	int labels[N], label;
	omp_set_num_threads(2);
	data_fill_batch(d, indices, N, mean, std, augment, 7, batch, labels);
	omp_set_num_threads(1);
	int differing_iterations = 0, differing_seeds = 0;
	for (int i = 0; i < N; i++) {
		data_fill_batch(d, indices + i, 1, mean, std, augment, 7, alone, &label);
		assert_int_equal(label, labels[i]);
		assert_memory_equal(alone, batch + i * image, image * sizeof *alone);
		data_fill_batch(d, indices + i, 1, mean, std, augment, 8, alone, &label);
		differing_iterations += memcmp(alone, batch + i * image, image * sizeof *alone) != 0;
		struct augment other = *augment;
		other.seed++;
		data_fill_batch(d, indices + i, 1, mean, std, &other, 7, alone, &label);
		differing_seeds += memcmp(alone, batch + i * image, image * sizeof *alone) != 0;
	}
	print_message("%d of %d images drawn otherwise at the next iteration, %d with the next seed\n",
		      differing_iterations, N, differing_seeds);
	assert_true(differing_iterations >= N / 2);
	assert_true(differing_seeds >= N / 2);
	free(batch);
	free(alone);
}

static void test_an_images_augmentation_is_keyed_by_seed_iteration_and_image(void **unused)
{
	(void)unused;
	struct dataset train, test;
	struct data_error error;
	struct data_request synthetic = {.set = SET_SYNTHETIC, .channels = 3, .height = 16, .width = 16, .classes = 4,
					 .train_images = 64, .test_images = 8, .seed = 11};
	assert_int_equal(data_open(&synthetic, &train, &test, &error), 0);
	expect_keyed(&train, &(struct augment){.seed = 3, .pad = 4, .flip = 1});
	char index[32];
	assert_string_equal(data_file_name(&train, 41, index, sizeof index), "41"); /* a set in memory: its index */
	dataset_free(&train);
	dataset_free(&test);
	struct data_request folder = {.set = SET_FOLDER, .dir = photos, .channels = 3, .height = 64, .width = 64,
				      .classes = 6, .skip_bad = true};
	assert_int_equal(data_open(&folder, &train, &test, &error), 0);
	assert_true(train.count > 41);
	/* the interface names each image: a folder's by its file under the
	 * data folder */
	char name[DATA_NAME_MAX], path[DATA_NAME_MAX + 400];
	data_file_name(&train, 7, name, sizeof name);
	snprintf(path, sizeof path, "%s/%s", photos, name);
	assert_int_equal(strncmp(name, "train/", 6), 0);
	assert_non_null(strchr(name + 6, '/'));
	assert_int_equal(access(path, R_OK), 0);
	expect_keyed(&train, &(struct augment){.seed = 3, .flip = 1, .shorter_min = 73, .shorter_max = 137});
	expect_keyed(&train, &(struct augment){.seed = 3, .flip = 1, .aspect = true});
	dataset_free(&train);
	dataset_free(&test);
}

/* The folder trains (its error falls below chance), evaluates with top-1
 * and top-5 error, and a run stopped and resumed ends on the weights of
 * the run never stopped, bit for bit: the data's order and each image's
 * draws follow the seed. */
static void test_folder_trains_evaluates_and_resumes_bitwise(void **unused)
{
	(void)unused;
	char options[2048], out[16384], err[4096], a[400], b[400], checkpoint[400];
	snprintf(a, sizeof a, "%s/whole.weights", scratch);
	snprintf(b, sizeof b, "%s/resumed.weights", scratch);
	snprintf(checkpoint, sizeof checkpoint, "%s/run.checkpoint", scratch);
	snprintf(options, sizeof options, "train --data %s --iterations 40 --save-weights %s", photos, a);
	assert_int_equal(binary("", "photos-f32", options, out, sizeof out, err, sizeof err), 0);
	char *last = strstr(out, "test error: ");
	assert_non_null(last);
	double error = atof(last + strlen("test error: "));
	print_message("photos: test error %.2f%% after 40 iterations (chance: 83%%)\n", error);
	assert_true(error < 60);
	/* and the scale augmentation's range scaled to this 64 crop */
	expect_in(out, "augmentation: shorter side scaled to [73, 137] (the paper's [256, 480] for a 224 crop, scaled to "
		       "this 64 crop), random 64x64 crop, random horizontal flip");
	snprintf(options, sizeof options,
		 "train --data %s --iterations 20 --checkpoint-every 20 --checkpoint %s", photos, checkpoint);
	assert_int_equal(binary("", "photos-f32", options, out, sizeof out, err, sizeof err), 0);
	snprintf(options, sizeof options, "train --data %s --resume %s --iterations 40 --save-weights %s", photos,
		 checkpoint, b);
	assert_int_equal(binary("", "photos-f32", options, out, sizeof out, err, sizeof err), 0);
	assert_true(same_file(a, b));
	/* Table 5's last row: the aspect-ratio augmentation, set at run time */
	snprintf(options, sizeof options, "train --data %s --iterations 4 --set augment.aspect=true", photos);
	assert_int_equal(binary("", "photos-f32", options, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "augmentation: random crops of 8% to 100% of the area and aspect ratio 3/4 to 4/3, scaled to the "
		       "input, random horizontal flip");
	snprintf(options, sizeof options, "evaluate --data %s --load-weights %s", photos, a);
	assert_int_equal(binary("", "photos-f32", options, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "of 24), top-5 error ");
	/* issue 84, item 13: the words say what runs: ImageNet's fixed
	 * normalisation, not the images' statistics */
	expect_in(out, "; inputs normalised by ImageNet's channel mean and deviation (torchvision's), as stored with the "
		       "weights; ");
}

/* Issue 84, item 13: resgen summary said "4-pixel pad and random crop"
 * of every folder and ImageNet spec, which use the scale augmentation. */
static void test_summary_says_the_folders_augmentation(void **unused)
{
	(void)unused;
	char command[1024], out[16384];
	snprintf(command, sizeof command, "%s/bin/resgen summary specs/resnet-50.yaml", build);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	expect_in(out, "augmentation: shorter side scaled to [256, 480], random 224x224 crop, random horizontal flip; "
		       "inputs normalised by ImageNet's channel mean and deviation (torchvision's)\n");
	snprintf(command, sizeof command, "%s/bin/resgen summary tests/specs/photos.yaml", build);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	expect_in(out, "augmentation: shorter side scaled to [73, 137] (the paper's [256, 480] for a 224 crop, scaled to "
		       "this 64 crop), random 64x64 crop, random horizontal flip; inputs normalised by ImageNet's channel "
		       "mean and deviation (torchvision's)\n");
	snprintf(command, sizeof command, "%s/bin/resgen summary specs/preact-110.yaml", build);
	assert_int_equal(run(command, out, sizeof out, NULL, 0), 0);
	expect_in(out, "augmentation: 4-pixel pad and random crop, random horizontal flip\n");
}

/* Issue 87, items 1 and 2: a folder's classes are named by their folders
 * and its images by their paths in the predictions, the confusion matrix
 * and every export's metadata, read back by Python's csv module, torch,
 * onnx and TorchScript (tests/images/check_names.py): names with spaces,
 * commas, quotes, a spreadsheet's formula, non-ASCII and a newline. And
 * item 6: resgen_torch.py evaluate measures the folder as the binary. */
static void test_outputs_name_a_folders_classes_and_files(void **unused)
{
	(void)unused;
	char command[4096], options[2048], out[16384], err[4096];
	snprintf(command, sizeof command,
		 "rm -rf %1$s/awkward && /usr/bin/python3 tests/images/make_folder.py %1$s/awkward --classes 6 "
		 "--train 3 --val 2 --awkward", scratch);
	assert_int_equal(run(command, NULL, 0, NULL, 0), 0);
	snprintf(options, sizeof options, "train --data %1$s/awkward --iterations 2 --save-weights %1$s/awkward.weights",
		 scratch);
	assert_int_equal(binary("", "photos-f32", options, out, sizeof out, err, sizeof err), 0);
	snprintf(options, sizeof options,
		 "evaluate --data %1$s/awkward --load-weights %1$s/awkward.weights --predictions %1$s/awkward.csv "
		 "--confusion %1$s/awkward-confusion.csv", scratch);
	assert_int_equal(binary("", "photos-f32", options, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "\nAnkle boot       ");
	expect_in(out, "\na, b and \"c\"     ");
	/* item 6: resgen_torch.py evaluate reads the folder as the binary
	 * does: the same error, top-5 error and, to f32's rounding, loss */
	char mine[256], *line = strstr(out, "\nerror ");
	assert_non_null(line);
	snprintf(mine, sizeof mine, "%.*s", (int)(strstr(line, ", loss ") - line), line);
	snprintf(command, sizeof command,
		 "/usr/bin/python3 tools/pytorch/resgen_torch.py evaluate tests/specs/photos.yaml %1$s/awkward.weights "
		 "--data %1$s/awkward", scratch);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 0);
	expect_in(out, mine);
	snprintf(command, sizeof command,
		 "/usr/bin/python3 tools/pytorch/resgen_torch.py export tests/specs/photos.yaml %1$s/awkward.weights "
		 "%1$s/awkward.pt --onnx %1$s/awkward.onnx && /usr/bin/python3 tools/pytorch/resgen_torch.py export "
		 "tests/specs/photos.yaml %1$s/awkward.weights %1$s/awkward-ts.pt --torchscript %1$s/awkward.ts && "
		 "/usr/bin/python3 tests/images/check_names.py %1$s/awkward %1$s/awkward.csv %1$s/awkward-confusion.csv "
		 "%1$s/awkward.pt %1$s/awkward.onnx %1$s/awkward.ts",
		 scratch);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "6 class names and 12 image paths read back from the predictions, the confusion matrix, the "
		       "state dict, ONNX's metadata and TorchScript's class_names.json\n");
}

/* Issue 87, item 4: a folder normalised by its own channel statistics
 * (data.normalise: folder), computed from its training images'
 * evaluation crops as the run starts and stored with the weights, equal
 * to torchvision's crops' statistics; and the spec's scale range, said
 * by the recipe line, --help and evaluate. */
static void test_a_folder_is_normalised_by_its_own_statistics(void **unused)
{
	(void)unused;
	static char out[16384], err[4096];
	char options[1024], weights[400], command[4096];
	snprintf(weights, sizeof weights, "%s/own.weights", scratch);
	snprintf(options, sizeof options, "train --data %s --iterations 4 --save-weights %s", photos, weights);
	assert_int_equal(binary("", "photos-own-f32", options, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "augmentation: shorter side scaled to [64, 96] (the spec's augment.scale), random 64x64 crop, "
		       "random horizontal flip; inputs normalised by the training images' own channel statistics, "
		       "computed as the run starts (data.normalise: folder)\n");
	expect_in(out, "normalisation: the 60 training images' channel mean [");
	struct tensor_file f;
	char error[512];
	assert_int_equal(tensor_file_load(&f, weights, error, sizeof error), 0);
	const struct tensor_file_entry *mean = tensor_file_find(&f, "meta/input_mean"),
				       *std = tensor_file_find(&f, "meta/input_std");
	assert_non_null(mean);
	assert_non_null(std);
	snprintf(command, sizeof command,
		 "/usr/bin/python3 -c 'import sys; sys.path.insert(0, \"tests/images\")\n"
		 "import numpy as np; from PIL import Image; from torchvision import transforms\n"
		 "from check_crops import folder_order\n"
		 "root = sys.argv[1] + \"/train\"; crop = 64; sums, squares, n = np.zeros(3), np.zeros(3), 0\n"
		 "t = transforms.Compose([transforms.Resize(round(256 * crop / 224)), transforms.CenterCrop(crop)])\n"
		 "for path, _ in folder_order(root):\n"
		 "    a = np.asarray(t(Image.open(root + \"/\" + path).convert(\"RGB\")), dtype=np.float64)"
		 ".transpose(2, 0, 1) / 255\n"
		 "    sums += a.sum((1, 2)); squares += (a * a).sum((1, 2)); n += crop * crop\n"
		 "m = sums / n; print(*m, *np.sqrt(squares / n - m * m))' %s", photos);
	assert_int_equal(run(command, out, sizeof out, err, sizeof err), 0);
	double theirs[6];
	assert_int_equal(sscanf(out, "%lf %lf %lf %lf %lf %lf", &theirs[0], &theirs[1], &theirs[2], &theirs[3],
				&theirs[4], &theirs[5]),
			 6);
	for (int c = 0; c < 3; c++) {
		if (fabs(mean->values[c] - theirs[c]) > 1e-12 || fabs(std->values[c] - theirs[3 + c]) > 1e-12)
			fail_msg("channel %d: stored mean %.17g, deviation %.17g; torchvision's crops' %.17g, %.17g", c,
				 mean->values[c], std->values[c], theirs[c], theirs[3 + c]);
		assert_true(fabs(mean->values[c] - image_folder_mean[c]) > 1e-3); /* not ImageNet's */
	}
	tensor_file_free(&f);
	snprintf(options, sizeof options, "evaluate --data %s --load-weights %s", photos, weights);
	assert_int_equal(binary("", "photos-own-f32", options, out, sizeof out, err, sizeof err), 0);
	expect_in(out, "; inputs normalised by the 60 training images' channel statistics, as stored with the weights;");
	assert_int_equal(binary("", "photos-own-f32", "--help", out, sizeof out, err, sizeof err), 0);
	expect_in(out, "shorter side scaled to [64, 96] (the spec's augment.scale)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folder_draws_the_papers_crops),
		cmocka_unit_test(test_summary_says_the_folders_augmentation),
		cmocka_unit_test(test_an_images_augmentation_is_keyed_by_seed_iteration_and_image),
		cmocka_unit_test(test_folder_crops_equal_torchvisions),
		cmocka_unit_test(test_folder_refuses_files_it_cannot_decode),
		cmocka_unit_test(test_folder_decodes_what_pillow_decodes),
		cmocka_unit_test(test_a_thin_image_takes_the_crops_memory),
		cmocka_unit_test(test_resume_notices_an_image_replaced_by_one_of_its_size),
		cmocka_unit_test(test_folder_trains_evaluates_and_resumes_bitwise),
		cmocka_unit_test(test_outputs_name_a_folders_classes_and_files),
		cmocka_unit_test(test_a_folder_is_normalised_by_its_own_statistics),
	};
	command_only_some();
	return cmocka_run_group_tests(tests, setup, NULL);
}
