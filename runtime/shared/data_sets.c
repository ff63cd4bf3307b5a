/* The data sets' table: data_sets.h. */
#include "data_sets.h"

#include <stddef.h>
#include <string.h>

/* ILSVRC 2012's counts: 1,281,167 training images, 50,000 validation
 * images (its val/ folder, the paper's test split). */
const struct data_set_info data_sets[SET_COUNT] = {
	[SET_CIFAR10] = {"cifar10", "CIFAR-10", "data/cifar10", 3, 32, 10, 50000, 10000, false},
	[SET_CIFAR100] = {"cifar100", "CIFAR-100", "data/cifar100", 3, 32, 100, 50000, 10000, false},
	[SET_FASHION_MNIST] = {"fashion-mnist", "Fashion-MNIST", "/usr/share/datasets/fashion-mnist", 1, 28, 10,
			       60000, 10000, false},
	[SET_MNIST] = {"mnist", "MNIST", "/usr/share/datasets/mnist", 1, 28, 10, 60000, 10000, false},
	[SET_SYNTHETIC] = {"synthetic", "synthetic data", "", 0, 0, 0, 0, 0, false},
	[SET_IMAGENET] = {"imagenet", "ImageNet (ILSVRC 2012)", "data/imagenet", 3, 224, 1000, 1281167, 50000, true},
	[SET_FOLDER] = {"folder", "a folder of images", "", 3, 224, 0, 0, 0, true},
};

const char *const data_set_names[SET_COUNT] = {
	[SET_CIFAR10] = "cifar10", [SET_CIFAR100] = "cifar100", [SET_FASHION_MNIST] = "fashion-mnist",
	[SET_MNIST] = "mnist",     [SET_SYNTHETIC] = "synthetic", [SET_IMAGENET] = "imagenet",
	[SET_FOLDER] = "folder",
};

const struct data_set_info *data_set_named(const char *name)
{
	for (int i = 0; name && i < SET_COUNT; i++)
		if (strcmp(data_sets[i].name, name) == 0)
			return &data_sets[i];
	return NULL;
}
